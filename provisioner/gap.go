package provisioner

import "time"

// Gap is the time between a segment's predecessor ending and the segment
// starting (positive: an interruption; negative: an overlap). It is known
// once the successor has started and the predecessor has finished with an
// end time; ok is false before.
func Gap(pred, succ Segment) (gap time.Duration, ok bool) {
	if succ.Start.IsZero() || pred.End.IsZero() || !pred.State.Finished() {
		return 0, false
	}
	return succ.Start.Sub(pred.End), true
}
