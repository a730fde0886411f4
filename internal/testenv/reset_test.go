package testenv

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
)

// freshCluster boots a control plane of the test's own, with its snapshot
// for a reset, and an administrator's client.
func freshCluster(t *testing.T) (*Cluster, client.Client) {
	t.Helper()
	ctx := context.Background()
	c, err := boot(ctx, startOptions{crds: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.cp.Stop() })
	if c.fresh, err = takeSnapshot(ctx, c.Config); err != nil {
		t.Fatal(err)
	}
	cl, err := client.New(c.Config, client.Options{Scheme: c.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c, cl
}

// A reset leaves the control plane as a new one would be: what a test
// made is gone, finalizers or not, a namespace's name is free again, and
// what the control plane held once started stays.
func TestReset(t *testing.T) {
	ctx := context.Background()
	c, cl := freshCluster(t)

	// What a suite makes: a namespace of a fixed name (the manager's) and
	// one generated, objects in both, one held by a finalizer no
	// controller will remove, and cluster-scoped RBAC.
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	fixed := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "vigil-system"}}
	generated := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "suite-"}}
	must(cl.Create(ctx, fixed))
	must(cl.Create(ctx, generated))
	must(cl.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: fixed.Name, Name: "vigil-limits"}}))
	must(cl.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: generated.Name, Name: "keys"}}))
	held := &v1.Check{ObjectMeta: metav1.ObjectMeta{Namespace: generated.Name, Name: "nightly", Finalizers: []string{"test.vigil.dev/keep"}}}
	must(cl.Create(ctx, held))
	must(cl.Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "vigil-manager-role"}}))

	for range 2 { // and a reset of a reset control plane does nothing
		if err := c.reset(ctx); err != nil {
			t.Fatal(err)
		}
	}

	for _, obj := range []client.Object{generated, held, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "vigil-manager-role"}}} {
		if err := cl.Get(ctx, client.ObjectKeyFromObject(obj), obj); !apierrors.IsNotFound(err) {
			t.Errorf("%T %s after the reset: %v, want NotFound", obj, obj.GetName(), err)
		}
	}
	// The fixed name is free, and the namespace made again is empty.
	must(cl.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "vigil-system"}}))
	var cms corev1.ConfigMapList
	must(cl.List(ctx, &cms, client.InNamespace("vigil-system")))
	if len(cms.Items) != 0 {
		t.Errorf("vigil-system made again holds %d ConfigMaps from before the reset", len(cms.Items))
	}
	// What the control plane started with is still there.
	must(cl.Get(ctx, client.ObjectKey{Name: corev1.NamespaceDefault}, &corev1.Namespace{}))
	var checks v1.CheckList
	must(cl.List(ctx, &checks))
	if len(checks.Items) != 0 {
		t.Errorf("%d Checks after the reset", len(checks.Items))
	}
}

// A reset refuses to pass over Vigil's objects that a test made in a
// namespace the control plane started with: the next suite's manager
// would see them.
func TestResetFailsOnObjectsInTheControlPlanesNamespaces(t *testing.T) {
	ctx := context.Background()
	c, cl := freshCluster(t)
	if err := cl.Create(ctx, &v1.Check{ObjectMeta: metav1.ObjectMeta{Namespace: corev1.NamespaceDefault, Name: "stray"}}); err != nil {
		t.Fatal(err)
	}
	err := c.reset(ctx)
	if err == nil || !strings.Contains(err.Error(), "checks default/stray") {
		t.Fatalf("reset = %v, want it to name checks default/stray", err)
	}
}

func TestStores(t *testing.T) {
	tests := []struct {
		env     string
		want    string
		wantErr bool
	}{
		{"", "sqlite", false},
		{"sqlite", "sqlite", false},
		{"postgres", "postgres", false},
		{"sqlite,postgres", "sqlite postgres", false},
		{"postgres, sqlite", "postgres sqlite", false},
		{"sqlite,sqlite", "sqlite", false},
		{"mysql", "", true},
		{"sqlite,", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.env, func(t *testing.T) {
			t.Setenv(StoreEnv, tt.env)
			got, err := Stores()
			if (err != nil) != tt.wantErr {
				t.Fatalf("Stores() error = %v, want error %v", err, tt.wantErr)
			}
			if strings.Join(got, " ") != tt.want {
				t.Errorf("Stores() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestPrefixer(t *testing.T) {
	var b strings.Builder
	p := &prefixer{w: &b, prefix: "[postgres] "}
	for _, w := range []string{"Ran 3 of", " 3 Specs\nok\n", "PASS"} {
		if _, err := p.Write([]byte(w)); err != nil {
			t.Fatal(err)
		}
	}
	p.flush()
	if want := "[postgres] Ran 3 of 3 Specs\n[postgres] ok\n[postgres] PASS\n"; b.String() != want {
		t.Errorf("got %q, want %q", b.String(), want)
	}
}
