package pack

// Published is a published packing figure: the share of GPU
// capacity left unallocated when the arrived GPU demand reached 100% of it,
// mean ± sd over seeds 42–51, in percent.
type Published struct {
	FGD, FGDSD         float64
	BestFit, BestFitSD float64
}

// ATC23Packing are the FGD authors' published figures on the openb lists
// ("Beware of Fragmentation", USENIX ATC'23; their artifact's
// experiments/analysis/expected_results/analysis_allo_discrete.csv, commit
// 8f3d641 of github.com/hkust-adsl/kubernetes-scheduler-simulator: 100 −
// the allocated share at 100% arrival, the workload shuffled and inflated
// to 130% of capacity, seeds 42–51), by pod list. Their BestFit is their
// own implementation, not mirage's best-fit. Lists they did not publish
// are absent.
var ATC23Packing = map[string]Published{
	"default":     {4.77, 0.10, 7.14, 0.14},
	"gpushare40":  {6.04, 0.07, 8.56, 0.19},
	"gpushare60":  {8.75, 0.12, 10.94, 0.17},
	"gpushare80":  {10.92, 0.10, 13.34, 0.23},
	"gpushare100": {13.36, 0.15, 15.38, 0.21},
	"cpu050":      {5.00, 0.11, 6.44, 0.12},
	"cpu100":      {4.79, 0.13, 6.74, 0.12},
	"cpu200":      {5.18, 0.15, 7.85, 0.20},
	"cpu250":      {6.80, 0.27, 8.79, 0.24},
}
