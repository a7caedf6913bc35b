package traces

import (
	"bufio"
	"fmt"
	"github.com/mirage-gpu/mirage/internal/safefile"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"
)

// ErrUnknownLike is returned by Synth for a trace it cannot imitate.
var ErrUnknownLike = fmt.Errorf("synth: unknown trace to imitate (want ls6)")

// The numbers below were fitted once from the shared LS6 file
// (tacc-ls6-a100/ls6-a100-until-2023-03-01.log.gz, 17,975 jobs submitted
// before 2023-03-01) with the reader of this package, times in US Central.
// "LS6 cut" below names that file.

// SynthEpoch is the first instant of a synthetic LS6 trace: midnight
// 2022-11-01 US Central (a Tuesday), the start of the LS6 cut's main period.
var SynthEpoch = time.Date(2022, 11, 1, 0, 0, 0, 0, centralTime)

// ls6JobsPerDay: LS6 cut, 17,975 jobs of which ~17,914 were submitted in the
// 120 days 2022-11-01 … 2023-02-28 → 149 jobs/day (the README's full file:
// ≈165/day over Nov–Mar).
const ls6JobsPerDay = 149.0

// ls6HourWeights: LS6 cut, share of submissions by local hour of day 0…23.
var ls6HourWeights = [24]float64{0.0284, 0.0196, 0.0184, 0.0129, 0.0122, 0.0130, 0.0145, 0.0236, 0.0367, 0.0513, 0.0610, 0.0775,
	0.0649, 0.0704, 0.0733, 0.0685, 0.0697, 0.0468, 0.0429, 0.0450, 0.0301, 0.0443, 0.0378, 0.0375}

// ls6DayWeights: LS6 cut, share of submissions by weekday, Sunday first.
var ls6DayWeights = [7]float64{0.1180, 0.1722, 0.1983, 0.1638, 0.1391, 0.1195, 0.0891}

type weighted struct {
	v int
	w float64
}

// ls6Nodes: LS6 cut, node-count shares (every value seen; 80.1% 1-node; the
// README's full file has 79.54%).
var ls6Nodes = []weighted{{1, 0.80128}, {4, 0.07705}, {2, 0.06581}, {3, 0.03332}, {16, 0.00690}, {8, 0.00506}, {12, 0.00456},
	{6, 0.00256}, {15, 0.00195}, {32, 0.00072}, {64, 0.00022}, {5, 0.00017}, {10, 0.00017}, {14, 0.00011}, {9, 0.00006}, {11, 0.00006}}

// ls6LimitsMin: LS6 cut, requested time limits in minutes with their shares:
// every value held by > 0.3% of jobs (together 92.6%; renormalised when
// sampling). 2,880 min (48 h) is the queue maximum.
var ls6LimitsMin = []weighted{{2880, 0.26225}, {30, 0.09880}, {120, 0.08501}, {1440, 0.08206}, {60, 0.06743}, {90, 0.04751},
	{720, 0.03288}, {180, 0.02937}, {240, 0.02898}, {300, 0.02515}, {600, 0.02370}, {1200, 0.02047}, {360, 0.01897},
	{480, 0.01758}, {10, 0.01563}, {5, 0.01246}, {2160, 0.01007}, {450, 0.00918}, {3, 0.00885}, {210, 0.00729}, {20, 0.00723},
	{15, 0.00723}, {140, 0.00579}, {260, 0.00573}, {1800, 0.00551}, {1320, 0.00428}, {150, 0.00389}, {2820, 0.00373},
	{960, 0.00334}, {840, 0.00317}, {2100, 0.00312}}

const (
	// ls6HitShare: LS6 cut, 16.28% of jobs ran ≥ their limit (README full
	// file: 15.65%); they overrun by 0–60 s (README: 16.30% within 60 s of
	// the limit, only 31 jobs over by > 5 min).
	ls6HitShare = 0.1628
	// ls6ZeroShare: LS6 cut, 13.15% of jobs have start == end (README full
	// file: 13.4%).
	ls6ZeroShare = 0.1315
	// ls6MaxOverrun: see ls6HitShare.
	ls6MaxOverrun = 60
)

// ls6RatioQ: LS6 cut, runtime/limit of the jobs that neither hit their limit
// nor had zero runtime, at the quantiles 0, 0.05, …, 1 (median 0.04: users
// over-request heavily).
var ls6RatioQ = []float64{0.00001, 0.00011, 0.00031, 0.00056, 0.00111, 0.00222, 0.00417, 0.00681, 0.01260, 0.02186, 0.04000,
	0.06506, 0.09944, 0.16406, 0.20731, 0.28294, 0.39691, 0.51679, 0.66017, 0.80635, 0.99979}

// ls6WaitP / ls6WaitQ: LS6 cut, queue wait (s) of the first job of each
// submission batch at the probabilities ls6WaitP.
var (
	ls6WaitP = []float64{0, .05, .1, .15, .2, .25, .3, .35, .4, .45, .5, .55, .6, .65, .7, .75, .8, .85, .9, .95, .975, .99, 1}
	ls6WaitQ = []float64{0, 0, 0, 0, 0, 1, 1, 1, 1, 3, 7, 19, 42, 200, 815, 2557, 6645, 17432, 39472, 77184, 118348, 172831, 2346086}
)

// ls6ChainLen: LS6 cut, lengths of job chains, a chain being jobs of one
// user with one job name, each submitted while its predecessor ran or
// within 10 min after it ended (12,405 chains; 31% of jobs are successors;
// ≥ 11 counted as 11 and generated as 11–20).
var ls6ChainLen = []weighted{{1, 10289}, {2, 1119}, {3, 395}, {4, 192}, {5, 111}, {6, 76}, {7, 48}, {8, 41}, {9, 28}, {10, 21}, {11, 85}}

const (
	// ls6Users: LS6 cut, 300 distinct users.
	ls6Users = 300
	// ls6ZipfS: LS6 cut, slope of log(jobs per user) against log(rank): −1.62.
	ls6ZipfS = 1.62
	// ls6SuccessorGapMax: LS6 cut, a successor is submitted a median 68 s
	// (p90 357 s) after its predecessor ends; drawn uniformly in 0…600 s.
	ls6SuccessorGapMax = 600
)

// ls6ExitCodes: README (full file): 0:0 84.95%, 1:0 11.3%, 127:0 1.8%, the
// rest under 1% each (lumped here as 2:0).
var ls6ExitCodes = []weighted{{0, 0.8495}, {1, 0.113}, {127, 0.018}, {2, 0.0195}}

func pick(r *rand.Rand, ws []weighted) int {
	total := 0.0
	for _, w := range ws {
		total += w.w
	}
	x := r.Float64() * total
	for _, w := range ws {
		x -= w.w
		if x < 0 {
			return w.v
		}
	}
	return ws[len(ws)-1].v
}

// quantile draws from a distribution given by values qs at probabilities ps
// (linear between them).
func quantile(r *rand.Rand, ps, qs []float64) float64 {
	u := r.Float64()
	i, _ := slices.BinarySearch(ps, u)
	if i == 0 {
		return qs[0]
	}
	if i >= len(ps) {
		return qs[len(qs)-1]
	}
	f := (u - ps[i-1]) / (ps[i] - ps[i-1])
	return qs[i-1] + f*(qs[i]-qs[i-1])
}

func poisson(r *rand.Rand, lambda float64) int {
	// Knuth's method; lambda here is at most a few tens.
	l, k, p := math.Exp(-lambda), 0, 1.0
	for {
		p *= r.Float64()
		if p <= l {
			return k
		}
		k++
	}
}

// Synth generates a synthetic trace like the named one ("ls6": the TACC LS6
// A100 queue) with submissions over days days from SynthEpoch, sorted by
// submit time and numbered from 1,000,000. The same seed gives the same
// trace (math/rand/v2 PCG). Model: job chains (one user, one name, one node
// count and limit) arrive as a Poisson process modulated by hour of day and
// day of week; each job's runtime is its limit plus 0–60 s (a limit hit),
// zero, or a fitted fraction of its limit; the first job waits a fitted
// queue wait; each successor is submitted 0–600 s after its predecessor
// ends and waits a fitted queue wait. Every fitted number is in this file
// with its source. Every job is submitted within the days (a chain still
// going at the end is cut there, as an export of those days would cut
// it), so the trace spans them; jobs may start and end after the last day.
func Synth(like string, days int, seed uint64) ([]Job, error) {
	if like != "ls6" {
		return nil, fmt.Errorf("%w: got %q", ErrUnknownLike, like)
	}
	if days <= 0 {
		return nil, fmt.Errorf("synth: days must be positive, got %d", days)
	}
	r := rand.New(rand.NewPCG(seed, 0x6d69726167652d73)) // "mirage-s"
	zipf := rand.NewZipf(r, ls6ZipfS, 1, ls6Users-1)
	meanChain := 0.0
	totalChains := 0.0
	for _, w := range ls6ChainLen {
		meanChain += float64(w.v) * w.w
		totalChains += w.w
	}
	meanChain /= totalChains
	// the 11+ bucket is generated as 11–20 (mean 15.5): correct for it
	meanChain += 4.5 * ls6ChainLen[len(ls6ChainLen)-1].w / totalChains
	chainsPerDay := ls6JobsPerDay / meanChain
	var jobs []Job
	chainID := 0
	cut := SynthEpoch.AddDate(0, 0, days) // no submission from here on
	for d := range days {
		day := SynthEpoch.AddDate(0, 0, d)
		dw := ls6DayWeights[day.Weekday()] * 7
		for h := range 24 {
			lambda := chainsPerDay * dw * ls6HourWeights[h]
			n := poisson(r, lambda)
			hourStart := time.Date(day.Year(), day.Month(), day.Day(), h, 0, 0, 0, centralTime)
			for range n {
				chainID++
				submit := hourStart.Add(time.Duration(r.IntN(3600)) * time.Second)
				jobs = synthChain(r, zipf, chainID, submit, cut, jobs)
			}
		}
	}
	slices.SortStableFunc(jobs, func(a, b Job) int { return a.Submit.Compare(b.Submit) })
	for i := range jobs {
		jobs[i].ID = strconv.Itoa(1_000_000 + i)
	}
	return jobs, nil
}

// synthChain appends a chain of jobs from submit on, leaving out those
// submitted at or after cut. Their numbers are drawn all the same, so that
// the jobs before cut do not depend on it: a trace of more days starts
// with the same jobs.
func synthChain(r *rand.Rand, zipf *rand.Zipf, chainID int, submit, cut time.Time, jobs []Job) []Job {
	user := fmt.Sprintf("%05d", 10000+int(zipf.Uint64()))
	name := "ch" + strconv.Itoa(chainID)
	if len(name) > 10 {
		name = name[:9] + "+"
	}
	nodes := pick(r, ls6Nodes)
	limit := time.Duration(pick(r, ls6LimitsMin)) * time.Minute
	n := pick(r, ls6ChainLen)
	if n == 11 {
		n += r.IntN(10)
	}
	for range n {
		wait := time.Duration(quantile(r, ls6WaitP, ls6WaitQ)) * time.Second
		start := submit.Add(wait)
		var runtime time.Duration
		switch u := r.Float64(); {
		case u < ls6HitShare:
			runtime = limit + time.Duration(r.IntN(ls6MaxOverrun+1))*time.Second
		case u < ls6HitShare+ls6ZeroShare:
			runtime = 0
		default:
			frac := quantile(r, ratioP, ls6RatioQ)
			runtime = time.Duration(frac * float64(limit)).Truncate(time.Second)
		}
		end := start.Add(runtime)
		j := Job{Name: name, User: user, Partition: "gpu-a100", GPUType: "a100", Submit: submit, Start: start, End: end,
			TimeLimit: limit, Nodes: nodes, GPUs: ls6GPUsPerNode * nodes, ExitCode: pick(r, ls6ExitCodes), Priority: int64(1000 + r.IntN(9000))}
		switch {
		case j.HitLimit():
			j.State = StateTimeout
		case j.ExitCode != 0:
			j.State = StateFailed
		default:
			j.State = StateCompleted
		}
		if j.Submit.Before(cut) {
			jobs = append(jobs, j)
		}
		submit = j.End.Add(time.Duration(r.IntN(ls6SuccessorGapMax+1)) * time.Second)
	}
	return jobs
}

// ratioP are the probabilities of ls6RatioQ: 0, 0.05, …, 1.
var ratioP = func() []float64 {
	p := make([]float64, 21)
	for i := range p {
		p[i] = float64(i) / 20
	}
	return p
}()

// LS6Header and LS6Dashes are lines 2 and 3 of the LS6 export, as in the source.
const (
	LS6Header = "       JobID    JobName    UID               Start              Submit                 End   Priority TimelimitR ExitCode   NNodes"
	LS6Dashes = "------------ ---------- ------ ------------------- ------------------- ------------------- ---------- ---------- -------- --------"
)

// WriteLS6 writes jobs in the LS6 export format (count line, header, dash
// row, TAB-separated rows, times in US Central). Every job must have
// submit, start and end times.
func WriteLS6(w io.Writer, jobs []Job) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	fmt.Fprintf(bw, "%d\n%s\n%s\n", len(jobs)+2, LS6Header, LS6Dashes)
	var buf []byte
	const layout = "2006-01-02T15:04:05"
	for i := range jobs {
		j := &jobs[i]
		if j.Submit.IsZero() || j.Start.IsZero() || j.End.IsZero() {
			return fmt.Errorf("traces: WriteLS6: job %s lacks a submit, start or end time", j.ID)
		}
		buf = buf[:0]
		buf = append(buf, j.ID...)
		buf = append(buf, '\t')
		buf = append(buf, j.Name...)
		buf = append(buf, '\t')
		buf = append(buf, j.User...)
		buf = append(buf, '\t')
		buf = j.Start.In(centralTime).AppendFormat(buf, layout)
		buf = append(buf, '\t')
		buf = j.Submit.In(centralTime).AppendFormat(buf, layout)
		buf = append(buf, '\t')
		buf = j.End.In(centralTime).AppendFormat(buf, layout)
		buf = append(buf, '\t')
		buf = strconv.AppendInt(buf, j.Priority, 10)
		buf = append(buf, '\t')
		buf = strconv.AppendInt(buf, int64(j.TimeLimit/time.Minute), 10)
		buf = append(buf, '\t')
		buf = strconv.AppendInt(buf, int64(j.ExitCode), 10)
		buf = append(buf, ':')
		buf = strconv.AppendInt(buf, int64(j.Signal), 10)
		buf = append(buf, '\t')
		buf = strconv.AppendInt(buf, int64(j.Nodes), 10)
		buf = append(buf, '\n')
		if _, err := bw.Write(buf); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// WriteSynth writes jobs in format (FormatLS6 or FormatCSV) to out, or to
// stdout when path is "" or "-", else atomically to the file path.
func WriteSynth(stdout io.Writer, path string, format Format, jobs []Job) error {
	if format != FormatLS6 && format != FormatCSV {
		return fmt.Errorf("--format %q: %w: want ls6 or csv", format, ErrUnknownFormat)
	}
	write := func(w io.Writer) error { return WriteJobs(w, format, jobs) }
	if path == "" || path == "-" {
		return write(stdout)
	}
	return safefile.WriteFile(path, 0o644, write)
}
