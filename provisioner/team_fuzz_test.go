package provisioner

import (
	"errors"
	"testing"
)

// FuzzParseTeamConfig: any input either parses into a configuration that
// NewTeamRules accepts and whose decisions do not panic, or fails with
// ErrTeamConfig.
func FuzzParseTeamConfig(f *testing.F) {
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
		cfg, err := ParseTeamConfig(data, "fuzz.yaml")
		if err != nil {
			if !errors.Is(err, ErrTeamConfig) {
				t.Fatalf("error without ErrTeamConfig: %v", err)
			}
			return
		}
		r, err := NewTeamRules(cfg, true)
		if err != nil {
			t.Fatalf("parsed config rejected by NewTeamRules: %v", err)
		}
		for _, name := range cfg.TeamNames() {
			if _, err := r.Admit(rt0, snap, &SubmitRequest{Account: name, GPUs: 2}); err != nil &&
				!errors.Is(err, ErrQuotaExceedsCluster) && !errors.Is(err, ErrTeamConfig) {
				t.Fatalf("admit for %s: %v", name, err)
			}
		}
	})
}
