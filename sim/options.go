package sim

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"
)

// Options describe a simulated cluster the way mirage's command line does:
// a preset, a slurm.conf read over it, and overrides. Config builds it.
type Options struct {
	Preset    string        // "ls6" or "default"
	SlurmConf string        // slurm.conf read over the preset ("" = none)
	NodeList  string        // a node list (sn,cpu_milli,memory_mib,gpu,model) replacing the nodes and partitions ("" = none); see WithNodeList
	Nodes     int           // keep only the first N nodes (0 = all)
	Backfill  string        // "on", "off" or "" (the preset's)
	BFWindow  time.Duration // bf_window (0 = the preset's)
	Latency   time.Duration // main-pass latency bound (negative = the preset's)
	Seed      uint64        // seed of the latency draws
	Weights   string        // priority weights "age=N,fairshare=N,size=N,partition=N,qos=N" ("" = the preset's); they imply PriorityType=priority/multifactor
}

// ErrOption marks an option that is not valid, as opposed to a slurm.conf
// that cannot be read (ErrConfig and file errors).
var ErrOption = errors.New("invalid simulator option")

// optionError is an invalid option: its message as given, and Is(ErrOption).
type optionError struct{ err error }

func (e *optionError) Error() string        { return e.err.Error() }
func (e *optionError) Unwrap() error        { return e.err }
func (e *optionError) Is(target error) bool { return target == ErrOption }

func badOption(err error) error { return &optionError{err} }

// Config builds the cluster's configuration. An invalid option (an unknown
// preset, a bad override, no nodes) is ErrOption; a slurm.conf that cannot
// be opened or parsed is returned as such.
func (o Options) Config() (Config, error) {
	cfg, err := Preset(o.Preset)
	if err != nil {
		return cfg, badOption(err)
	}
	if o.SlurmConf != "" {
		fh, err := os.Open(o.SlurmConf)
		if err != nil {
			return cfg, err
		}
		defer fh.Close()
		if cfg, err = ParseSlurmConf(fh, cfg); err != nil {
			return cfg, err
		}
	}
	if o.NodeList != "" {
		if cfg, err = readNodeList(o.NodeList, cfg); err != nil {
			return cfg, err
		}
	}
	if o.Nodes > 0 && o.Nodes < len(cfg.Nodes) {
		cfg.Nodes = cfg.Nodes[:o.Nodes]
		for i := range cfg.Partitions {
			if len(cfg.Partitions[i].Nodes) > o.Nodes {
				cfg.Partitions[i].Nodes = nil // all (remaining) nodes
			}
		}
	}
	switch o.Backfill {
	case "on":
		cfg.Backfill = true
	case "off":
		cfg.Backfill = false
	case "":
	default:
		return cfg, badOption(fmt.Errorf("--backfill: want on or off, got %q", o.Backfill))
	}
	if o.BFWindow > 0 {
		cfg.BFWindow = o.BFWindow
	}
	if o.Latency >= 0 {
		cfg.SchedLatency = o.Latency
	}
	cfg.Seed = o.Seed
	if o.Weights != "" {
		cfg.PriorityType = PriorityMultifactor // weights count only there
		for _, kv := range strings.Split(o.Weights, ",") {
			k, v, _ := strings.Cut(kv, "=")
			var x float64
			if _, err := fmt.Sscan(v, &x); err != nil {
				return cfg, badOption(fmt.Errorf("--weights: %q: %w", kv, err))
			}
			switch k {
			case "age":
				cfg.PriorityWeightAge = x
			case "fairshare":
				cfg.PriorityWeightFairshare = x
			case "size":
				cfg.PriorityWeightJobSize = x
			case "partition":
				cfg.PriorityWeightPartition = x
			case "qos":
				cfg.PriorityWeightQOS = x
			default:
				return cfg, badOption(fmt.Errorf("--weights: unknown weight %q", k))
			}
		}
	}
	if len(cfg.Nodes) == 0 {
		return cfg, badOption(errors.New("no nodes: use --preset ls6 or --slurm-conf"))
	}
	return cfg, nil
}
