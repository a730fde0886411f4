package v1alpha1

import (
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

// TestProjectFile keeps the kubebuilder PROJECT file in step with the API:
// the group, version, path and kinds it lists are those this package
// registers, each namespaced, with a CRD in config/crd/bases.
func TestProjectFile(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "PROJECT"))
	if err != nil {
		t.Fatal(err)
	}
	var project struct {
		Domain    string `json:"domain"`
		Repo      string `json:"repo"`
		Resources []struct {
			API *struct {
				CRDVersion string `json:"crdVersion"`
				Namespaced bool   `json:"namespaced"`
			} `json:"api"`
			Domain  string `json:"domain"`
			Group   string `json:"group"`
			Kind    string `json:"kind"`
			Path    string `json:"path"`
			Version string `json:"version"`
		} `json:"resources"`
	}
	if err := yaml.Unmarshal(raw, &project); err != nil {
		t.Fatal(err)
	}
	if got := project.Repo + "/api/" + GroupVersion.Version; got != reflect.TypeFor[Check]().PkgPath() {
		t.Errorf("PROJECT repo gives package %s, want %s", got, reflect.TypeFor[Check]().PkgPath())
	}
	var listed []string
	for _, r := range project.Resources {
		if r.API == nil {
			continue // a controller of a type Vigil does not define
		}
		if got := r.Group + "." + r.Domain; got != GroupVersion.Group || r.Version != GroupVersion.Version {
			t.Errorf("%s: group %s version %s, want %s", r.Kind, got, r.Version, GroupVersion)
		}
		if r.Path != reflect.TypeFor[Check]().PkgPath() || r.API.CRDVersion != "v1" {
			t.Errorf("%s: path %s, crdVersion %s", r.Kind, r.Path, r.API.CRDVersion)
		}
		crd := filepath.Join("..", "..", "config", "crd", "bases", GroupVersion.Group+"_"+strings.ToLower(r.Kind)+"s.yaml")
		text, err := os.ReadFile(crd)
		if err != nil {
			crd = strings.TrimSuffix(crd, "ys.yaml") + "ies.yaml"
			if text, err = os.ReadFile(crd); err != nil {
				t.Errorf("%s: no CRD in config/crd/bases", r.Kind)
			}
		}
		if scope := map[bool]string{true: "scope: Namespaced", false: "scope: Cluster"}[r.API.Namespaced]; err == nil && !strings.Contains(string(text), scope) {
			t.Errorf("%s: PROJECT says namespaced %v, the CRD has not %q", r.Kind, r.API.Namespaced, scope)
		}
		listed = append(listed, r.Kind)
	}
	s := runtime.NewScheme()
	if err := AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	var registered []string
	for kind := range s.KnownTypes(GroupVersion) {
		if _, isList := s.KnownTypes(GroupVersion)[kind+"List"]; isList {
			registered = append(registered, kind)
		}
	}
	sort.Strings(listed)
	sort.Strings(registered)
	if !reflect.DeepEqual(listed, registered) {
		t.Errorf("PROJECT lists kinds %v, the package registers %v", listed, registered)
	}
}
