package pack

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/mirage-gpu/mirage/internal/testenv"
	"github.com/mirage-gpu/mirage/provisioner/placement"
)

// packingResults is the results file TestPackingResults writes and checks.
const packingResults = "../../docs/results/packing.md"

// packingCommand regenerates packingResults.
const packingCommand = `MIRAGE_UPDATE_RESULTS=1 go test -tags "libsqlite3 xgboost" -run '^TestPackingResults$' -timeout 60m ./eval/pack/`

// packingTyped are the lists the results also replay with a quarter of
// their GPU pods type-constrained (ConstrainTypes).
var packingTyped = []string{"default", "gpushare40", "cpu250"}

// packingLists returns the openb pod lists in the order of the results
// file: default, then the GPU-sharing lists, then the CPU-heavy ones, each
// by its number.
func packingLists(t *testing.T, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "openb_pod_list_*.csv"))
	if err != nil {
		t.Fatal(err)
	}
	testenv.Require(t, len(files) > 0, "the shared openb pod lists ("+dir+"/openb_pod_list_*.csv)", testenv.NeedSharedTraces.How+" (a complete copy)")
	rank := func(f string) (int, int) {
		name := ListName(f)
		for i, prefix := range []string{"default", "gpushare", "cpu"} {
			if rest, ok := strings.CutPrefix(name, prefix); ok {
				n, _ := strconv.Atoi(rest)
				return i, n
			}
		}
		return 3, 0
	}
	slices.SortFunc(files, func(a, b string) int {
		ga, na := rank(a)
		gb, nb := rank(b)
		if ga != gb {
			return ga - gb
		}
		if na != nb {
			return na - nb
		}
		return strings.Compare(a, b)
	})
	return files
}

// packingPolicies are the results' columns.
var packingPolicies = []placement.Policy{placement.FragAware, placement.BestFit, placement.FirstFit, placement.Spread}

// packingMultiPolicies are the columns of the multi-GPU-heavy section:
// frag-aware against best-fit, first-fit and the FGD baseline.
var packingMultiPolicies = []placement.Policy{placement.FragAware, placement.BestFit, placement.FirstFit, placement.FGD}

// packingSpec is the published methodology as `mirage pack-eval` runs it
// by default: shuffled arrivals inflated to 130%, seeds 42–51 (the paper's;
// mirage's parameters were tuned on seeds 1–10), the pod list's mix.
func packingSpec(nodes string, pods []string, types float64) Spec {
	return Spec{Nodes: nodes, Pods: pods, Policies: packingPolicies, Mode: Fill, Until: 1.3, Order: "shuffled",
		Seeds: 10, FirstSeed: 42, Inflate: 1.3, Types: types, Points: 20}
}

// TestPackingResults measures packing on the openb traces with the ATC'23
// methodology and, with MIRAGE_UPDATE_RESULTS=1, writes
// docs/results/packing.md: every shared list, and three with a quarter of
// the GPU pods type-constrained, mirage's policies next to the published
// FGD figures, and checks the acceptance of issue #18 (frag-aware at or
// below FGD's published mean where published, below best-fit and first-fit
// everywhere, failing no more pods than the best other policy). Without
// it the full run (minutes) is too slow for every test run: it re-measures
// the default pod list only and checks its rows against the file, and
// re-draws the multi-GPU-heavy mixes (no replay) to check their table. The
// section on the multi-GPU-heavy mixes (issue #48: the default list with
// 20–50% of its GPU demand re-drawn as 2-, 4- and 8-GPU pods, MultiGPU)
// checks frag-aware at or below best-fit, first-fit and the FGD baseline on
// every share. It needs the shared traces (testenv.SharedTrace) and skips
// under -short.
func TestPackingResults(t *testing.T) {
	nodes := testenv.SharedTrace(t, "alibaba-pai-openb-2023/openb_node_list_gpu_node.csv")
	update := os.Getenv("MIRAGE_UPDATE_RESULTS") == "1"
	if !update && testing.Short() {
		t.Skip("-short: not re-measuring the packing results") // never in CI: make test does not pass -short
	}
	lists := []string{testenv.SharedTrace(t, "alibaba-pai-openb-2023/openb_pod_list_default.csv")}
	if update {
		lists = packingLists(t, filepath.Dir(nodes))
	}
	rep, err := Evaluate(context.Background(), packingSpec(nodes, lists, 0))
	if err != nil {
		t.Fatal(err)
	}
	if update {
		var typed []string
		for _, l := range packingTyped {
			typed = append(typed, filepath.Join(filepath.Dir(nodes), "openb_pod_list_"+l+".csv"))
		}
		trep, err := Evaluate(context.Background(), packingSpec(nodes, typed, DefaultTypeShare))
		if err != nil {
			t.Fatal(err)
		}
		for i := range trep.Lists {
			trep.Lists[i].File = strings.TrimSuffix(trep.Lists[i].File, ".csv") + "+types25.csv"
		}
		rep.Lists = append(rep.Lists, trep.Lists...)
	}
	defaultList := testenv.SharedTrace(t, "alibaba-pai-openb-2023/openb_pod_list_default.csv")
	multi, multiVerdicts := packingMultiGPU(t, nodes, defaultList, update)
	var comparison, tables bytes.Buffer
	verdicts := writePackingComparison(&comparison, rep)
	if err := rep.WriteMarkdown(&tables, nil); err != nil {
		t.Fatal(err)
	}
	if !update {
		want, err := os.ReadFile(packingResults)
		if err != nil {
			t.Fatalf("%v: create it with %s", err, packingCommand)
		}
		got := rowsOf(comparison.String()+tables.String(), "default")
		if exp := rowsOf(string(want), "default"); !slices.Equal(got, exp) {
			t.Errorf("%s is stale for the default pod list (regenerate with %s):\nmeasured\n%s\nfile\n%s",
				packingResults, packingCommand, strings.Join(got, "\n"), strings.Join(exp, "\n"))
		}
		if got, exp := mixRows(string(multi)), mixRows(string(want)); len(got) == 0 || !slices.Equal(got, exp) {
			t.Errorf("%s is stale for the multi-GPU-heavy mixes (regenerate with %s):\ndrawn\n%s\nfile\n%s",
				packingResults, packingCommand, strings.Join(got, "\n"), strings.Join(exp, "\n"))
		}
		return
	}
	for _, v := range append(slices.Clone(verdicts), multiVerdicts...) {
		if !v.ok {
			t.Errorf("acceptance: %s: %s", v.list, v.why)
		}
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "# Packing on the openb traces (ATC'23 methodology)\n\n")
	fmt.Fprintf(&b, "Generated by `eval/pack/results_test.go`; do not edit. Regenerate (18 pod lists × 4 policies × 10 seeds and 5 multi-GPU-heavy\n")
	fmt.Fprintf(&b, "mixes × 4 policies × 10 seeds, minutes) with\n\n")
	fmt.Fprintf(&b, "```sh\n%s\n```\n\n", packingCommand)
	fmt.Fprintf(&b, "with the shared traces in `../shared/traces` (or `$MIRAGE_TRACES`). Without `MIRAGE_UPDATE_RESULTS` the test only\n")
	fmt.Fprintf(&b, "re-measures the default pod list and checks its rows against this file, and re-draws the multi-GPU-heavy mixes to check\n")
	fmt.Fprintf(&b, "their table (without the traces it fails in CI, skips elsewhere).\n")
	fmt.Fprintf(&b, "The same figures, as text: `mirage pack-eval --nodes $T/openb_node_list_gpu_node.csv --pods $T/openb_pod_list_default.csv`\n")
	fmt.Fprintf(&b, "(add `--types 0.25` for the type-constrained rows, `--multi-gpu 0.3 --policies frag-aware,best-fit,first-fit,fgd` for a\n")
	fmt.Fprintf(&b, "multi-GPU-heavy row) with `T=../shared/traces/alibaba-pai-openb-2023`.\n\n")
	fmt.Fprintf(&b, "Cluster: `openb_node_list_gpu_node.csv`, %d nodes, %.0f GPUs; %s.\n", rep.NodeN, rep.GPUs, rep.Methodology())
	fmt.Fprintf(&b, "The `+types25` rows replay the list with 25%% of its GPU pods type-constrained (`ConstrainTypes`, drawn per seed; the\n")
	fmt.Fprintf(&b, "held-out gpuspec lists are not used). Shares are of the cluster's GPU capacity. The scores are on the paper's seeds\n")
	fmt.Fprintf(&b, "42–51; every parameter of frag-aware (the CPU-capacity term, the scarcity weight, the mix) was chosen on seeds 1–10.\n")
	fmt.Fprintf(&b, "FGD and BestFit (published) are the paper's artifact's figures from its own simulator (their BestFit is not mirage's\n")
	fmt.Fprintf(&b, "best-fit); mirage's replays follow its methodology (docs/guide/training-and-evaluation.md), not its code.\n\n")
	b.Write(comparison.Bytes())
	fmt.Fprintln(&b)
	fmt.Fprintf(&b, "Acceptance (issue #18): frag-aware's mean at or below FGD's published mean where published, below best-fit's and\n")
	fmt.Fprintf(&b, "first-fit's on every list, and no more failed pods than the best other policy:\n\n")
	writeVerdicts(&b, verdicts)
	fmt.Fprintln(&b)
	b.Write(tables.Bytes())
	fmt.Fprintln(&b)
	b.Write(multi)
	if err := os.MkdirAll(filepath.Dir(packingResults), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(packingResults, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s (%d pod lists)", packingResults, len(rep.Lists))
}

// packVerdict is the acceptance of one pod list.
type packVerdict struct {
	list, why string
	ok        bool
}

// writePackingComparison writes the table of the headline figure next to
// the published ones and returns the acceptance of each list.
func writePackingComparison(b *bytes.Buffer, rep *Report) []packVerdict {
	fmt.Fprintf(b, "Unallocated share of GPU capacity at 100%% arrival, mean ± sd over seeds 42–51 (lower is better):\n\n")
	fmt.Fprintf(b, "| pod list | FGD (published) | BestFit (published) |")
	for _, p := range rep.Policies {
		fmt.Fprintf(b, " mirage %s |", p)
	}
	fmt.Fprintf(b, "\n|---|---|---|")
	for range rep.Policies {
		fmt.Fprint(b, "---|")
	}
	fmt.Fprintln(b)
	var out []packVerdict
	for i := range rep.Lists {
		pl := &rep.Lists[i]
		name := ListName(pl.File)
		pub, published := ATC23Packing[name]
		fgd, bf := "-", "-"
		if published {
			fgd, bf = fmt.Sprintf("%.2f ± %.2f%%", pub.FGD, pub.FGDSD), fmt.Sprintf("%.2f ± %.2f%%", pub.BestFit, pub.BestFitSD)
		}
		fmt.Fprintf(b, "| %s | %s | %s |", name, fgd, bf)
		for j := range pl.Summary {
			fmt.Fprintf(b, " %s |", packPM(pl.Summary[j].Unalloc100))
		}
		fmt.Fprintln(b)
		fa, bfs, ffs := pl.SummaryOf(placement.FragAware), pl.SummaryOf(placement.BestFit), pl.SummaryOf(placement.FirstFit)
		if fa == nil || bfs == nil || ffs == nil {
			continue
		}
		v := packVerdict{list: name, ok: true}
		mean := func(s *Summary) float64 { return 100 * s.Unalloc100.Mean }
		var why []string
		if published {
			why = append(why, fmt.Sprintf("%.2f vs FGD %.2f", mean(fa), pub.FGD))
			v.ok = v.ok && mean(fa) <= pub.FGD
		}
		why = append(why, fmt.Sprintf("best-fit %.2f, first-fit %.2f", mean(bfs), mean(ffs)))
		v.ok = v.ok && mean(fa) < mean(bfs) && mean(fa) < mean(ffs)
		bestFailed := -1.0
		for j := range pl.Summary {
			if s := &pl.Summary[j]; s.Policy != placement.FragAware && (bestFailed < 0 || s.Failed100.Mean < bestFailed) {
				bestFailed = s.Failed100.Mean
			}
		}
		why = append(why, fmt.Sprintf("failed pods %.0f vs the best other's %.0f", fa.Failed100.Mean, bestFailed))
		v.ok = v.ok && fa.Failed100.Mean <= bestFailed
		v.why = strings.Join(why, "; ")
		out = append(out, v)
	}
	return out
}

// rowsOf returns the table rows of one pod list, in order.
func rowsOf(md, list string) []string {
	var out []string
	for _, l := range strings.Split(md, "\n") {
		if strings.HasPrefix(l, "| "+list+" |") {
			out = append(out, l)
		}
	}
	return out
}

// packingMultiGPU is the section on the multi-GPU-heavy mixes of a pod
// list (issue #48): the list as it is and with MultiGPUShares of its GPU
// demand re-drawn as 2-, 4- and 8-GPU pods (MultiGPU, drawn per seed),
// frag-aware against best-fit, first-fit and the FGD baseline, and the
// acceptance of each share. Without update it only draws the mixes (no
// replay) and returns their table.
func packingMultiGPU(t *testing.T, nodes, list string, update bool) ([]byte, []packVerdict) {
	t.Helper()
	st, _, err := LoadNodes(nodes)
	if err != nil {
		t.Fatal(err)
	}
	pods, _, err := LoadPods(list, false)
	if err != nil {
		t.Fatal(err)
	}
	name := ListName(list)
	var b bytes.Buffer
	fmt.Fprintf(&b, "## Multi-GPU-heavy mixes (issue #48)\n\n")
	fmt.Fprintf(&b, "The held-out multigpu20–50 lists are not used: `MultiGPU` re-draws the %s list's pods of exactly one whole GPU (no\n", name)
	fmt.Fprintf(&b, "type constraint), in a seeded random order, as pods of 2, 4 or 8 GPUs (probabilities 0.2, 0.2, 0.6: the proportions\n")
	fmt.Fprintf(&b, "of the list's own multi-GPU pods), each asking for k times the CPU and memory of the pod it replaces, until pods of\n")
	fmt.Fprintf(&b, "2 or more GPUs carry the stated share of the GPU demand; only sizes that some node could hold are drawn (a pod no\n")
	fmt.Fprintf(&b, "size fits stays as it was); shared-GPU, CPU-only and the list's own multi-GPU pods are kept. Drawn per seed; the\n")
	fmt.Fprintf(&b, "draw of seed 42:\n\n")
	fmt.Fprintf(&b, "| mix | share asked | pods re-drawn | pods of 2 / 4 / 8 GPUs | their share of the GPU demand | GPU demand |\n|---|---|---|---|---|---|\n")
	for _, share := range append([]float64{0}, MultiGPUShares...) {
		out := MultiGPU(pods, st, share, packingSpec(nodes, nil, 0).FirstSeed)
		redrawn, sizes, demand := 0, map[int]int{}, 0
		for i, p := range out {
			if p.Demand.GPUMilli != pods[i].Demand.GPUMilli {
				redrawn++
			}
			if k := p.Demand.WholeGPUs(); k >= 2 {
				sizes[k]++
			}
			demand += p.Demand.GPUMilli
		}
		label, asked := multiLabel(name, share), "-"
		if share > 0 {
			asked = fmt.Sprintf("%.0f%%", 100*share)
		}
		fmt.Fprintf(&b, "| mix %s | %s | %d | %d / %d / %d | %.2f%% | %.1f GPUs |\n", label, asked, redrawn, sizes[2], sizes[4], sizes[8],
			100*MultiGPUShare(out), float64(demand)/placement.MilliGPU)
	}
	fmt.Fprintln(&b)
	if !update {
		return b.Bytes(), nil
	}
	var rep *Report
	for _, share := range append([]float64{0}, MultiGPUShares...) {
		spec := packingSpec(nodes, []string{list}, 0)
		spec.Policies, spec.MultiGPU = packingMultiPolicies, share
		r, err := Evaluate(context.Background(), spec)
		if err != nil {
			t.Fatal(err)
		}
		r.Lists[0].File = multiLabel(name, share)
		if rep == nil {
			rep = r
		} else {
			rep.Lists = append(rep.Lists, r.Lists...)
		}
	}
	fmt.Fprintf(&b, "Columns: mirage's frag-aware, best-fit and first-fit, and `fgd`: the FGD baseline (`placement.FGD`, evaluation only,\n")
	fmt.Fprintf(&b, "not a policy of the product) implemented from the paper's definition — the node's fragment F_n(m) (all of its free\n")
	fmt.Fprintf(&b, "GPU capacity when the task class cannot run there, else its GPUs with less free than min(D_m, 1)), its expectation\n")
	fmt.Fprintf(&b, "F_n(M) over the list's typical pods (the most frequent classes of GPU, CPU and GPU types covering 95%% of the pods),\n")
	fmt.Fprintf(&b, "each pod placed where F_n(M) grows least — without frag-aware's CPU-capacity term and scarcity cost. The paper\n")
	fmt.Fprintf(&b, "leaves ties open; the baseline breaks them by best fit, which left fewer GPUs unallocated than node order on\n")
	fmt.Fprintf(&b, "seeds 1–10. It is mirage's reading of the paper, not the authors' artifact:")
	if pub, ok := ATC23Packing[name]; ok {
		if fgd := rep.Lists[0].SummaryOf(placement.FGD); fgd != nil {
			fmt.Fprintf(&b, " on the %s list as it is it leaves %.2f%% unallocated where\n", name, 100*fgd.Unalloc100.Mean)
			fmt.Fprintf(&b, "the authors' published FGD left %.2f%% (their simulator and code, not restated here).", pub.FGD)
		}
	}
	fmt.Fprintf(&b, " frag-aware is the product's placement, as in the rest of\n")
	fmt.Fprintf(&b, "this page, with its rule for multi-GPU-heavy mixes (`placement.ExtensionWeight`): its CPU-capacity term and scarcity\n")
	fmt.Fprintf(&b, "cost count in full while classes of 2 or more GPUs carry up to %.0f%% of its mix's GPU demand, not at all from %.0f%%,\n",
		100*placement.ExtensionFullBelow, 100*placement.ExtensionNoneFrom)
	fmt.Fprintf(&b, "linearly in between — computed from the mix alone; the lists above carry less than %.0f%%, so their figures are\n",
		100*placement.ExtensionFullBelow)
	fmt.Fprintf(&b, "unchanged by it. The bounds were chosen on seeds 1–10 (the variants compared are in docs/guide/training-and-evaluation.md).\n")
	fmt.Fprintf(&b, "FGD's published figures on the held-out multigpu lists are for other pod lists and are not compared here.\n\n")
	fmt.Fprintf(&b, "Unallocated share of GPU capacity at 100%% arrival, mean ± sd over seeds %d–%d (lower is better):\n\n",
		rep.Seeds[0], rep.Seeds[len(rep.Seeds)-1])
	fmt.Fprintf(&b, "| mix | multi-GPU share of the GPU demand |")
	for _, p := range rep.Policies {
		fmt.Fprintf(&b, " %s |", p)
	}
	fmt.Fprintf(&b, "\n|---|---|")
	for range rep.Policies {
		fmt.Fprint(&b, "---|")
	}
	fmt.Fprintln(&b)
	var out []packVerdict
	pct := func(s *Summary) float64 { return math.Round(10000*s.Unalloc100.Mean) / 100 } // at the printed precision
	for i := range rep.Lists {
		pl := &rep.Lists[i]
		fmt.Fprintf(&b, "| %s | %.1f%% |", pl.File, 100*pl.MultiGPU)
		for j := range pl.Summary {
			fmt.Fprintf(&b, " %s |", packPM(pl.Summary[j].Unalloc100))
		}
		fmt.Fprintln(&b)
		if i == 0 {
			continue // the list as it is: not a multi-GPU-heavy mix
		}
		fa := pl.SummaryOf(placement.FragAware)
		v := packVerdict{list: pl.File, ok: true}
		var why []string
		for _, p := range packingMultiPolicies[1:] {
			o := pl.SummaryOf(p)
			why = append(why, fmt.Sprintf("%s %.2f", p, pct(o)))
			v.ok = v.ok && pct(fa) <= pct(o)
		}
		v.why = fmt.Sprintf("frag-aware %.2f; %s", pct(fa), strings.Join(why, ", "))
		out = append(out, v)
	}
	fmt.Fprintln(&b)
	fmt.Fprintf(&b, "Acceptance (issue #48): on every multi-GPU-heavy mix, frag-aware's mean at or below best-fit's, first-fit's and the\n")
	fmt.Fprintf(&b, "FGD baseline's (at the printed precision), on the scored seeds:\n\n")
	writeVerdicts(&b, out)
	fmt.Fprintln(&b)
	if err := rep.WriteMarkdown(&b, func(pl *List) string { return pl.File }); err != nil {
		t.Fatal(err)
	}
	return b.Bytes(), out
}

// multiLabel names a multi-GPU-heavy mix of a list in the results.
func multiLabel(list string, share float64) string {
	if share == 0 {
		return list + " as listed"
	}
	return fmt.Sprintf("%s+multi%.0f", list, 100*share)
}

// mixRows returns the rows of the table of drawn mixes, in order.
func mixRows(md string) []string {
	var out []string
	for _, l := range strings.Split(md, "\n") {
		if strings.HasPrefix(l, "| mix ") && !strings.HasPrefix(l, "| mix |") {
			out = append(out, l)
		}
	}
	return out
}

// writeVerdicts writes one acceptance line per list: holds, or does not.
func writeVerdicts(b *bytes.Buffer, vs []packVerdict) {
	for _, v := range vs {
		mark := "holds"
		if !v.ok {
			mark = "**does not hold**"
		}
		fmt.Fprintf(b, "- %s: %s (%s)\n", v.list, mark, v.why)
	}
}
