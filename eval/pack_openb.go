package eval

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/mirage-gpu/mirage/provisioner/placement"
	"github.com/mirage-gpu/mirage/traces"
)

// ErrPackInput marks a pack-eval error caused by its input: a malformed or
// missing node list, a node list without GPUs, a pod list without pods, a
// pod no placement can take as stated. errors.Is finds it; the message is
// the cause's. Errors reading the pod lists are the traces package's own.
var ErrPackInput = errors.New("bad pack-eval input")

// packInputError is an input error: its own message, matching ErrPackInput.
type packInputError struct{ err error }

func (e packInputError) Error() string   { return e.err.Error() }
func (e packInputError) Unwrap() []error { return []error{e.err, ErrPackInput} }

func packInput(err error) error { return packInputError{err} }

// PackSpec is one pack-eval run: an openb node list, the pod lists replayed
// onto it, and the placement policies compared on each.
type PackSpec struct {
	Nodes    string             // node list (openb_node_list_*.csv: sn,cpu_milli,memory_mib,gpu,model)
	Pods     []string           // pod lists (openb_pod_list_*.csv)
	Policies []placement.Policy // policies to compare, in this order
	Mode     PackMode           // PackFill or PackReplay
	Until    float64            // fill: stop when the arrived GPU demand reaches this multiple of the capacity
	Seed     uint64             // fill: shuffle the arrival order with this seed (0 = trace order)
	Points   int                // points on the fragmentation curve
	SkipBad  bool               // skip malformed pod rows instead of failing
	Progress PackProgress       // follows the replays (nil = silent)
}

// PackProgress follows a pack-eval run: Start before each policy's replay
// of a pod list (label "FILE POLICY"), Update as its arrivals are processed,
// Done after it.
type PackProgress interface {
	Start(label string)
	Update(done, total int)
	Done()
}

// PackList is the outcome for one pod list.
type PackList struct {
	File     string        `json:"file"`
	Pods     int           `json:"pods"`
	GPUPods  int           `json:"gpu_pods"`
	Sharing  int           `json:"sharing_pods"`
	Typed    int           `json:"typed_pods"`
	Skipped  int           `json:"skipped_rows,omitempty"`
	EvalMix  placement.Mix `json:"eval_mix"`
	Results  []*PackResult `json:"results"`
	WallSecs float64       `json:"wall_seconds"` // reporting only
}

// PackReport is the outcome of a pack-eval run.
type PackReport struct {
	Nodes    string             `json:"nodes"`
	NodeN    int                `json:"node_count"`
	GPUs     float64            `json:"gpus"`
	Mode     PackMode           `json:"mode"`
	Until    float64            `json:"until"`
	Seed     uint64             `json:"seed"`
	Policies []placement.Policy `json:"policies"`
	Lists    []PackList         `json:"pod_lists"`
}

// Validate reports a spec RunPack cannot run, naming the flags of `mirage
// pack-eval` that set the values.
func (s *PackSpec) Validate() error {
	if s.Until <= 0 || s.Points <= 0 {
		return errors.New("--until and --points must be positive")
	}
	if s.Mode != PackFill && s.Mode != PackReplay {
		return fmt.Errorf("--mode %q: want fill or replay", s.Mode)
	}
	for _, p := range s.Policies {
		if _, err := placement.ParsePolicy(string(p)); err != nil {
			return fmt.Errorf("--policies: %w", err)
		}
	}
	return nil
}

// RunPack replays every pod list onto the node list under every policy
// (Pack), each policy's fragmentation measured under the mix of the whole
// pod list.
func RunPack(ctx context.Context, spec PackSpec) (*PackReport, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	st, nNodes, err := LoadPackNodes(spec.Nodes)
	if err != nil {
		return nil, err
	}
	capMilli, _ := st.Totals()
	rep := &PackReport{Nodes: spec.Nodes, NodeN: nNodes, GPUs: float64(capMilli) / placement.MilliGPU, Mode: spec.Mode,
		Until: spec.Until, Seed: spec.Seed, Policies: spec.Policies}
	for _, file := range spec.Pods {
		pods, pl, err := LoadPackPods(file, spec.SkipBad)
		if err != nil {
			return nil, err
		}
		ds := make([]placement.Demand, len(pods))
		for i := range pods {
			ds[i] = pods[i].Demand
		}
		mix := placement.LearnMix(ds, placement.Mix{}, placement.MixOptions{MaxClasses: 64})
		mix.Source = fmt.Sprintf("%s (%d pods)", filepath.Base(file), len(pods))
		pl.EvalMix = mix
		wall := time.Now() // reporting only
		for _, pol := range spec.Policies {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			o := PackOptions{Mode: spec.Mode, Until: spec.Until, Seed: spec.Seed, Points: spec.Points, EvalMix: &mix}
			if spec.Progress != nil {
				spec.Progress.Start(filepath.Base(file) + " " + string(pol))
				o.Progress = spec.Progress.Update
			}
			res, err := Pack(st, pods, pol, o)
			if spec.Progress != nil {
				spec.Progress.Done()
			}
			if err != nil {
				return nil, packInput(fmt.Errorf("%s: %w", file, err))
			}
			pl.Results = append(pl.Results, res)
		}
		pl.WallSecs = time.Since(wall).Seconds()
		rep.Lists = append(rep.Lists, *pl)
	}
	return rep, nil
}

// LoadPackNodes reads an openb node list into a placement state (every node
// schedulable, all its GPUs free) and returns it with the node count.
func LoadPackNodes(path string) (*placement.State, int, error) {
	nodes, err := traces.ReadNodes(path)
	if err != nil {
		var pe *traces.ParseError
		if errors.As(err, &pe) || errors.Is(err, traces.ErrMalformed) || errors.Is(err, os.ErrNotExist) {
			return nil, 0, packInput(err)
		}
		return nil, 0, err
	}
	if len(nodes) == 0 {
		return nil, 0, packInput(fmt.Errorf("%s: no nodes", path))
	}
	pn := make([]placement.Node, len(nodes))
	for i, n := range nodes {
		pn[i] = placement.Node{Name: n.Name, GPUType: n.Model, Schedulable: true, CPUMilli: n.CPUMilli, GPUFree: make([]int, n.GPUs)}
		for g := range pn[i].GPUFree {
			pn[i].GPUFree[g] = placement.MilliGPU
		}
	}
	st, err := placement.NewState(pn)
	if err != nil {
		return nil, 0, packInput(fmt.Errorf("%s: %w", path, err))
	}
	if c, _ := st.Totals(); c == 0 {
		return nil, 0, packInput(fmt.Errorf("%s: no GPUs on any node", path))
	}
	return st, len(nodes), nil
}

// LoadPackPods reads an openb pod list: every pod asking for a GPU or a CPU,
// as a pod of one node (num_gpu whole GPUs, or a share of one GPU when
// gpu_milli is below 1000; the GPU models of gpu_spec; cpu_milli), arriving
// at its creation time and holding its resources for its recorded runtime.
// The list's counts come back in a PackList.
func LoadPackPods(path string, skipBad bool) ([]PackPod, *PackList, error) {
	r, err := traces.Open(path, traces.Options{Format: traces.FormatOpenB, SkipBad: skipBad})
	if err != nil {
		return nil, nil, err
	}
	defer r.Close()
	pl := &PackList{File: path}
	var pods []PackPod
	for j, err := range traces.All(r) {
		if err != nil {
			return nil, nil, err
		}
		d := placement.Demand{GPUMilli: j.GPUs * placement.MilliGPU, CPUMilli: j.CPUs * 1000}
		if j.GPUMilli > 0 {
			d.GPUMilli = j.GPUMilli
			pl.Sharing++
		}
		if j.GPUType != "" {
			d.GPUTypes = strings.Split(j.GPUType, "|")
			pl.Typed++
		}
		if d.GPUMilli == 0 && d.CPUMilli == 0 {
			continue
		}
		if d.GPUMilli > 0 {
			pl.GPUPods++
		}
		pods = append(pods, PackPod{Name: j.ID, Demand: d, Arrive: j.Submit.Sub(time.Unix(0, 0)), Runtime: j.Runtime()})
	}
	pl.Skipped = r.Skipped()
	pl.Pods = len(pods)
	if len(pods) == 0 {
		return nil, nil, packInput(fmt.Errorf("%s: no pods asking for GPUs or CPUs", path))
	}
	return pods, pl, nil
}
