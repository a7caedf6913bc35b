package k8s

import (
	"os"
	"reflect"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"
)

// The controller's ClusterRole (deploy/02-clusterrole.yaml) grants exactly
// what the CLI's role on the test control plane grants
// (scripts/k8s/rbac/1-clusterrole.json): the same adapter does the same
// things under either identity, and the integration tests, which run as
// the CLI's user, prove those permissions suffice.
func TestControllerRoleIsTheCLIRole(t *testing.T) {
	read := func(path string, doc int) rbacv1.ClusterRole {
		t.Helper()
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var r rbacv1.ClusterRole
		if err := yaml.UnmarshalStrict([]byte(strings.Split(string(data), "\n---\n")[doc]), &r); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if r.Kind != "ClusterRole" || len(r.Rules) == 0 {
			t.Fatalf("%s: %+v, want a ClusterRole with rules", path, r)
		}
		return r
	}
	deploy := read("../deploy/02-clusterrole.yaml", 0)
	cli := read("../scripts/k8s/rbac/1-clusterrole.json", 0)
	if !reflect.DeepEqual(deploy.Rules, cli.Rules) {
		t.Errorf("deploy/02-clusterrole.yaml rules\n%+v\ndiffer from scripts/k8s/rbac/1-clusterrole.json\n%+v", deploy.Rules, cli.Rules)
	}
}
