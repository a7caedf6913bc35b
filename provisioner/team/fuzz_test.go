package team

import (
	"errors"
	"testing"

	"github.com/mirage-gpu/mirage/provisioner"
)

// FuzzParseConfig: any input either parses into a configuration that
// NewRules accepts and whose decisions do not panic, or fails with
// ErrConfig.
func FuzzParseConfig(f *testing.F) {
	for _, s := range []string{
		twoTeams,
		"teams: [{name: a, gpus: 4, gpuTypes: {A100: 2}, borrowLimit: 1}]\nborrowing: {grace: 5s, enabled: false}\nplacement: {policy: spread, hints: always}",
		`{"teams":[{"name":"x","gpus":1}],"overcommit":true}`,
		"teams: [{name: '', gpus: 1}]",
		"teams:\n  - name: a\n    gpus: -1",
	} {
		f.Add([]byte(s))
	}
	snap := cluster(4, 10).s
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := ParseConfig(data, "fuzz.yaml")
		if err != nil {
			if !errors.Is(err, ErrConfig) {
				t.Fatalf("error without ErrConfig: %v", err)
			}
			return
		}
		r, err := NewRules(cfg)
		if err != nil {
			t.Fatalf("parsed config rejected by NewRules: %v", err)
		}
		for _, name := range cfg.TeamNames() {
			if _, err := r.Admit(rt0, snap, &provisioner.SubmitRequest{Account: name, GPUs: 2}); err != nil &&
				!errors.Is(err, ErrQuotaExceedsCluster) && !errors.Is(err, ErrConfig) {
				t.Fatalf("admit for %s: %v", name, err)
			}
		}
	})
}
