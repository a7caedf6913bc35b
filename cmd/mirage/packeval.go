package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/mirage-gpu/mirage/provisioner"
	"github.com/mirage-gpu/mirage/traces"
)

func init() { register(newPackEvalCmd) }

// packEvalOptions are the flags of "mirage pack-eval".
type packEvalOptions struct {
	nodes    string
	pods     []string
	policies []string
	mode     string
	until    float64
	seed     uint64
	points   int
	skipBad  bool
	json     bool
	progress io.Writer // stderr on a terminal, else nil
}

func newPackEvalCmd() *cobra.Command {
	o := &packEvalOptions{}
	cmd := &cobra.Command{
		Use:   "pack-eval --nodes NODES.csv --pods PODS.csv... [--policies first-fit,best-fit,spread,frag-aware]",
		Short: "Replay pod arrivals onto a node list and compare placement policies by GPU fragmentation",
		Long: `Evaluate GPU packing as in "Beware of Fragmentation" (ATC'23) on an openb node
list (sn,cpu_milli,memory_mib,gpu,model) and openb pod lists. Each pod asks one
node for CPU and for whole GPUs or a share of one (GPU sharing); memory is not
modelled.

--mode fill (default; the ATC'23 methodology): pods arrive in trace order and
never leave until the demand reaches --until times the GPU capacity.
--mode replay: pods arrive at their creation time and leave after their runtime.

Per pod list and policy it reports the share of GPUs left unallocated when
placement first fails, the expected fragmented share (the ATC'23 measure), the
failed pods, and the fragmentation along the way.

Methodology: docs/guide/training-and-evaluation.md; placement policies:
docs/guide/team-rules.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if st, err := os.Stderr.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 && cmd.ErrOrStderr() == os.Stderr {
				o.progress = cmd.ErrOrStderr()
			}
			return runPackEval(cmd.OutOrStdout(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.nodes, "nodes", "", "node list (openb_node_list_*.csv; required)")
	f.StringSliceVar(&o.pods, "pods", nil, "pod lists (openb_pod_list_*.csv; comma-separated or repeated; required)")
	f.StringSliceVar(&o.policies, "policies", []string{"first-fit", "best-fit", "spread", "frag-aware"}, "placement policies to compare")
	f.StringVar(&o.mode, "mode", "fill", "fill (arrivals only, until --until of capacity) or replay (arrivals and departures on the trace clock)")
	f.Float64Var(&o.until, "until", 1, "fill: stop when the arrived GPU demand reaches this multiple of the capacity")
	f.Uint64Var(&o.seed, "seed", 0, "fill: shuffle the arrival order with this seed (0 = trace order)")
	f.IntVar(&o.points, "points", 20, "points on the fragmentation curve")
	f.BoolVar(&o.skipBad, "skip-bad", false, "skip malformed pod rows instead of failing")
	f.BoolVar(&o.json, "json", false, "print JSON")
	_ = cmd.MarkFlagRequired("nodes")
	_ = cmd.MarkFlagRequired("pods")
	return cmd
}

// packList is the outcome for one pod list.
type packList struct {
	File     string                    `json:"file"`
	Pods     int                       `json:"pods"`
	GPUPods  int                       `json:"gpu_pods"`
	Sharing  int                       `json:"sharing_pods"`
	Typed    int                       `json:"typed_pods"`
	Skipped  int                       `json:"skipped_rows,omitempty"`
	EvalMix  provisioner.Mix           `json:"eval_mix"`
	Results  []*provisioner.PackResult `json:"results"`
	WallSecs float64                   `json:"wall_seconds"`
}

// packReport is the JSON output.
type packReport struct {
	Nodes    string     `json:"nodes"`
	NodeN    int        `json:"node_count"`
	GPUs     float64    `json:"gpus"`
	Mode     string     `json:"mode"`
	Until    float64    `json:"until"`
	Seed     uint64     `json:"seed"`
	Policies []string   `json:"policies"`
	Lists    []packList `json:"pod_lists"`
}

func runPackEval(out io.Writer, o *packEvalOptions) error {
	if o.until <= 0 || o.points <= 0 {
		return withCode(exitUsage, errors.New("--until and --points must be positive"))
	}
	mode := provisioner.PackMode(o.mode)
	if mode != provisioner.PackFill && mode != provisioner.PackReplay {
		return withCode(exitUsage, fmt.Errorf("--mode %q: want fill or replay", o.mode))
	}
	var policies []provisioner.PlacePolicy
	for _, p := range o.policies {
		pol, err := provisioner.ParsePlacePolicy(strings.TrimSpace(p))
		if err != nil {
			return withCode(exitUsage, fmt.Errorf("--policies: %w", err))
		}
		policies = append(policies, pol)
	}
	st, nNodes, err := loadPackNodes(o.nodes)
	if err != nil {
		return err
	}
	capMilli, _ := st.Totals()
	rep := packReport{Nodes: o.nodes, NodeN: nNodes, GPUs: float64(capMilli) / provisioner.MilliGPU, Mode: o.mode,
		Until: o.until, Seed: o.seed, Policies: o.policies}
	for _, file := range o.pods {
		pods, pl, err := loadPackPods(file, o.skipBad)
		if err != nil {
			return err
		}
		ds := make([]provisioner.Demand, len(pods))
		for i := range pods {
			ds[i] = pods[i].Demand
		}
		mix := provisioner.LearnMix(ds, provisioner.Mix{}, provisioner.MixOptions{MaxClasses: 64})
		mix.Source = fmt.Sprintf("%s (%d pods)", filepath.Base(file), len(pods))
		pl.EvalMix = mix
		wall := time.Now() // reporting only
		for _, pol := range policies {
			bar := &packBar{w: o.progress, label: filepath.Base(file) + " " + string(pol)}
			res, err := provisioner.PackEval(st, pods, pol, provisioner.PackOptions{Mode: mode, Until: o.until, Seed: o.seed,
				Points: o.points, EvalMix: &mix, Progress: bar.update})
			bar.done()
			if err != nil {
				return withCode(exitBadInput, fmt.Errorf("%s: %w", file, err))
			}
			pl.Results = append(pl.Results, res)
		}
		pl.WallSecs = time.Since(wall).Seconds()
		rep.Lists = append(rep.Lists, *pl)
	}
	if o.json {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	return printPackReport(out, &rep)
}

// loadPackNodes reads an openb node list into a placement state.
func loadPackNodes(path string) (*provisioner.PlaceState, int, error) {
	nodes, err := traces.ReadNodes(path)
	if err != nil {
		var pe *traces.ParseError
		if errors.As(err, &pe) || errors.Is(err, traces.ErrMalformed) {
			return nil, 0, withCode(exitBadInput, err)
		}
		if errors.Is(err, os.ErrNotExist) {
			return nil, 0, withCode(exitBadInput, err)
		}
		return nil, 0, err
	}
	if len(nodes) == 0 {
		return nil, 0, withCode(exitBadInput, fmt.Errorf("%s: no nodes", path))
	}
	pn := make([]provisioner.PlaceNode, len(nodes))
	for i, n := range nodes {
		pn[i] = provisioner.PlaceNode{Name: n.Name, GPUType: n.Model, Schedulable: true, CPUMilli: n.CPUMilli, GPUFree: make([]int, n.GPUs)}
		for g := range pn[i].GPUFree {
			pn[i].GPUFree[g] = provisioner.MilliGPU
		}
	}
	st, err := provisioner.NewPlaceState(pn)
	if err != nil {
		return nil, 0, withCode(exitBadInput, fmt.Errorf("%s: %w", path, err))
	}
	if c, _ := st.Totals(); c == 0 {
		return nil, 0, withCode(exitBadInput, fmt.Errorf("%s: no GPUs on any node", path))
	}
	return st, len(nodes), nil
}

// loadPackPods reads an openb pod list: every pod asking for a GPU or a CPU.
func loadPackPods(path string, skipBad bool) ([]provisioner.PackPod, *packList, error) {
	r, err := traces.Open(path, traces.Options{Format: traces.FormatOpenB, SkipBad: skipBad})
	if err != nil {
		return nil, nil, traceErr(err)
	}
	defer r.Close()
	pl := &packList{File: path}
	var pods []provisioner.PackPod
	for j, err := range traces.All(r) {
		if err != nil {
			return nil, nil, traceErr(err)
		}
		d := provisioner.Demand{GPUMilli: j.GPUs * provisioner.MilliGPU, CPUMilli: j.CPUs * 1000}
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
		pods = append(pods, provisioner.PackPod{Name: j.ID, Demand: d, Arrive: j.Submit.Sub(time.Unix(0, 0)), Runtime: j.Runtime()})
	}
	pl.Skipped = r.Skipped()
	pl.Pods = len(pods)
	if len(pods) == 0 {
		return nil, nil, withCode(exitBadInput, fmt.Errorf("%s: no pods asking for GPUs or CPUs", path))
	}
	return pods, pl, nil
}

func pct(x float64) string { return fmt.Sprintf("%.1f%%", 100*x) }

func printPackReport(w io.Writer, rep *packReport) error {
	fmt.Fprintf(w, "cluster: %s — %d nodes, %.0f GPUs; mode %s", rep.Nodes, rep.NodeN, rep.GPUs, rep.Mode)
	if rep.Mode == string(provisioner.PackFill) {
		fmt.Fprintf(w, " until %.0f%% of capacity has arrived", 100*rep.Until)
		if rep.Seed != 0 {
			fmt.Fprintf(w, " (arrival order shuffled, seed %d)", rep.Seed)
		}
	}
	fmt.Fprintln(w)
	for _, pl := range rep.Lists {
		fmt.Fprintf(w, "\n%s: %d pods (%d with GPUs, %d sharing a GPU, %d with a GPU-type constraint)\n", pl.File, pl.Pods, pl.GPUPods, pl.Sharing, pl.Typed)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "POLICY\tFIRST-FAIL-AT\tUNALLOC-AT-FAIL\tFRAG-AT-FAIL\tFAILED\tUNALLOC-END\tFRAG-END\tMAX-ALLOC\t")
		for _, r := range pl.Results {
			at, ua, fr := "none", "-", "-"
			if f := r.FirstFailure; f != nil {
				at, ua, fr = pct(f.Arrived), pct(f.Unallocated), pct(f.Fragmented)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t\n", r.Policy, at, ua, fr, r.Failed, pct(r.End.Unallocated), pct(r.End.Fragmented), pct(r.MaxAlloc))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		fmt.Fprintln(w, "(shares of GPU capacity; FIRST-FAIL-AT: arrived GPU demand when placement first failed)")
		if len(pl.Results) == 0 || len(pl.Results[0].Curve) == 0 {
			continue
		}
		x := "ARRIVED"
		if rep.Mode == string(provisioner.PackReplay) {
			x = "HOURS"
		}
		fmt.Fprintf(w, "fragmented share of capacity (free GPUs the pod mix cannot use) along the run:\n")
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprint(tw, x+"\t")
		for _, r := range pl.Results {
			fmt.Fprintf(tw, "%s\t", r.Policy)
		}
		fmt.Fprintln(tw)
		n := len(pl.Results[0].Curve)
		for i := 0; i < n; i++ {
			p := pl.Results[0].Curve[i]
			if rep.Mode == string(provisioner.PackReplay) {
				fmt.Fprintf(tw, "%.0f\t", p.Time)
			} else {
				fmt.Fprintf(tw, "%s\t", pct(p.Arrived))
			}
			for _, r := range pl.Results {
				if i < len(r.Curve) {
					fmt.Fprintf(tw, "%s\t", pct(r.Curve[i].Fragmented))
				} else {
					fmt.Fprint(tw, "-\t")
				}
			}
			fmt.Fprintln(tw)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return nil
}

// packBar draws a one-line progress bar on a terminal.
type packBar struct {
	w     io.Writer
	label string
	last  int
	drawn bool
}

func (b *packBar) update(done, total int) {
	if b == nil || b.w == nil || total <= 0 {
		return
	}
	p := min(100, 100*done/total)
	if b.drawn && p == b.last {
		return
	}
	b.last, b.drawn = p, true
	n := p / 4
	fmt.Fprintf(b.w, "\r%s [%s%s] %3d%%", b.label, strings.Repeat("#", n), strings.Repeat(".", 25-n), p)
}

func (b *packBar) done() {
	if b != nil && b.w != nil && b.drawn {
		fmt.Fprint(b.w, "\r\033[K")
	}
}
