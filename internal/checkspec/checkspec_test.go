package checkspec_test

import (
	"context"
	"errors"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/checkspec"
	"github.com/vigil-operator/vigil/internal/testenv"
)

// TestWriter runs the conflict policy against a real API server.
func TestWriter(t *testing.T) {
	env, err := testenv.New()
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := env.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = env.Stop() }()
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	w := &checkspec.Writer{Client: c, Reader: c}
	timeout := int64(3600)

	t.Run("a change lost to another writer is applied again to the newest copy", func(t *testing.T) {
		read := &v1.Check{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "contended"}, Spec: v1.CheckSpec{Timeout: &timeout, Grace: 60}}
		if err := w.Create(ctx, read); err != nil {
			t.Fatal(err)
		}
		// Someone else writes after our read.
		other := read.DeepCopy()
		other.Spec.Tags = "theirs"
		if err := c.Update(ctx, other); err != nil {
			t.Fatal(err)
		}
		runs := 0
		got, err := w.Update(ctx, read, func(c *v1.Check) error {
			runs++
			c.Spec.Desc = "ours"
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if runs != 2 || got.Spec.Tags != "theirs" || got.Spec.Desc != "ours" {
			t.Fatalf("after %d runs: tags %q desc %q; want both changes, applied twice", runs, got.Spec.Tags, got.Spec.Desc)
		}
		// Nothing to change: nothing written.
		same, err := w.Update(ctx, got, func(*v1.Check) error { return nil })
		if err != nil || same.ResourceVersion != got.ResourceVersion {
			t.Fatalf("a no-op update wrote (version %s -> %s, err %v)", got.ResourceVersion, same.ResourceVersion, err)
		}
		// A change that fails is not written.
		bad := errors.New("no")
		if _, err := w.Update(ctx, got, func(c *v1.Check) error { c.Spec.Desc = "x"; return bad }); !errors.Is(err, bad) {
			t.Fatalf("err = %v, want the change's error", err)
		}
	})

	t.Run("a delete never deletes a re-created object of the same name", func(t *testing.T) {
		old := &v1.Check{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "recreated"}, Spec: v1.CheckSpec{Timeout: &timeout, Grace: 60}}
		if err := w.Create(ctx, old); err != nil {
			t.Fatal(err)
		}
		if err := c.Delete(ctx, old.DeepCopy()); err != nil {
			t.Fatal(err)
		}
		fresh := &v1.Check{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "recreated"}, Spec: v1.CheckSpec{Timeout: &timeout, Grace: 60}}
		if err := w.Create(ctx, fresh); err != nil {
			t.Fatal(err)
		}
		if err := w.Delete(ctx, old); err == nil || apierrors.IsNotFound(err) {
			t.Fatalf("deleting the old object answered %v, want a failed precondition", err)
		}
		if err := c.Get(ctx, client.ObjectKeyFromObject(fresh), &v1.Check{}); err != nil {
			t.Fatalf("the re-created check is gone: %v", err)
		}
		if err := w.Delete(ctx, fresh); err != nil {
			t.Fatal(err)
		}
		if err := w.Delete(ctx, fresh); err != nil {
			t.Fatalf("deleting a check already gone: %v", err)
		}
	})
}
