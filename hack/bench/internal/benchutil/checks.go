package benchutil

import (
	"context"
	"fmt"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
)

// Reconciled tells whether the controller has reconciled a check's current
// generation.
func Reconciled(o *v1.Check) bool { return o.Status.ObservedGeneration == o.Generation }

// WaitAll waits until every check in ns satisfies ok, polling r (a client
// or the manager's cache, which it reads without copying: ok must not
// change the check). It gives up after timeout, or never when timeout is
// zero.
func WaitAll(ctx context.Context, r client.Reader, ns string, timeout time.Duration, ok func(*v1.Check) bool) error {
	deadline := time.Now().Add(timeout)
	for {
		var list v1.CheckList
		if err := r.List(ctx, &list, client.InNamespace(ns), client.UnsafeDisableDeepCopy); err != nil {
			return err
		}
		waiting := 0
		for i := range list.Items {
			if !ok(&list.Items[i]) {
				waiting++
			}
		}
		if waiting == 0 {
			return nil
		}
		if timeout > 0 && time.Now().After(deadline) {
			return fmt.Errorf("%d checks still not ready after %v", waiting, timeout)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
