package controller

import (
	"context"
	"encoding/json"
	"fmt"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// statusWrite is a reconcile's one write of its object's status, deferred
// to its end. Every reconciler of a Vigil kind that has a status of its
// own has Flux's shape, fetch, then the deferred write, then its steps:
//
//	obj := &v1.StatusPage{}
//	if err := r.Get(ctx, req.NamespacedName, obj); err != nil {
//		return ctrl.Result{}, client.IgnoreNotFound(err)
//	}
//	status := beginStatus(r.Client, obj)
//	defer func() { err = status.end(ctx, err) }()
//
// The Check's status is not written this way: it is the ping store's
// projection, within the status budget (package projection).
type statusWrite struct {
	c        client.Client
	obj      client.Object
	before   client.Object
	canceled bool
}

// beginStatus remembers obj as read.
func beginStatus(c client.Client, obj client.Object) *statusWrite {
	return &statusWrite{c: c, obj: obj, before: obj.DeepCopyObject().(client.Object)}
}

// cancel: nothing is to be written (the reconcile deleted the object).
func (s *statusWrite) cancel() { s.canceled = true }

// end writes the status when the reconcile changed it and did not fail: a
// failed reconcile is retried, and a status half computed is never shown.
// The write is a merge patch of what changed, so that a kind with another
// status writer keeps what that one wrote (a Channel's last delivery is
// the dispatcher's). A deleted object has nothing to write.
func (s *statusWrite) end(ctx context.Context, err error) error {
	if err != nil || s.canceled || equality.Semantic.DeepEqual(s.before, s.obj) {
		return err
	}
	patch, err := statusPatch(s.before, s.obj)
	if err != nil {
		return err
	}
	if err := s.c.Status().Patch(ctx, s.obj, client.RawPatch(types.MergePatchType, patch)); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("writing the status of %s: %w", client.ObjectKeyFromObject(s.obj), err)
	}
	return nil
}

// statusPatch is the merge patch from before to after. A status the
// controller has not written yet (no observedGeneration) is patched whole:
// a zero value ("checks": 0, "active": false) is zero in the object as
// read too, and a diff would leave it out, so a printer column would show
// nothing.
func statusPatch(before, after client.Object) ([]byte, error) {
	original, err := json.Marshal(before)
	if err != nil {
		return nil, err
	}
	modified, err := json.Marshal(after)
	if err != nil {
		return nil, err
	}
	var read struct {
		Status struct {
			ObservedGeneration int64 `json:"observedGeneration"`
		} `json:"status"`
	}
	if err := json.Unmarshal(original, &read); err != nil {
		return nil, err
	}
	if read.Status.ObservedGeneration == 0 {
		var whole map[string]any
		if err := json.Unmarshal(original, &whole); err != nil {
			return nil, err
		}
		delete(whole, "status")
		if original, err = json.Marshal(whole); err != nil {
			return nil, err
		}
	}
	return jsonpatch.CreateMergePatch(original, modified)
}
