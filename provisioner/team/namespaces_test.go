package team

import (
	"maps"
	"strings"
	"testing"
)

// Namespaces map to one team each; once one team lists namespaces, every
// team must (a team without one would own none of its pods).
func TestConfigNamespaces(t *testing.T) {
	cfg, err := ParseConfig([]byte("teams: [{name: a, gpus: 4, namespaces: [ml, ml-dev]}, {name: b, gpus: 4, namespaces: [infra]}]"), "r.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := cfg.NamespaceTeams(), map[string]string{"ml": "a", "ml-dev": "a", "infra": "b"}; !maps.Equal(got, want) {
		t.Errorf("NamespaceTeams = %v, want %v", got, want)
	}
	for _, c := range []struct{ yaml, want string }{
		{"teams: [{name: a, gpus: 4, namespaces: [ml]}, {name: b, gpus: 4, namespaces: [ml]}]", "also team a's"},
		{"teams: [{name: a, gpus: 4, namespaces: [ml]}, {name: b, gpus: 4}]", "team b lists no namespaces"},
		{"teams: [{name: a, gpus: 4, namespaces: ['']}]", "empty name"},
	} {
		if _, err := ParseConfig([]byte(c.yaml), "r.yaml"); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error saying %q", c.yaml, err, c.want)
		}
	}
	none, err := ParseConfig([]byte("teams: [{name: a, gpus: 4}]"), "r.yaml")
	if err != nil || none.NamespaceTeams() != nil {
		t.Errorf("no namespaces: %v, %v; want a nil mapping", none.NamespaceTeams(), err)
	}
}
