package testenv

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
)

// snapshot is what a fresh control plane holds: the UIDs of its objects
// and the names of its namespaces. A reset deletes everything else.
type snapshot struct {
	uids       map[types.UID]bool
	namespaces map[string]bool
}

// The API groups whose objects the API server makes and keeps by itself,
// some of them after it is ready (the APIService of each CRD's group, the
// priority-and-fairness configuration): never a test's, left as they are.
var apiServerGroups = []string{"apiregistration.k8s.io", "flowcontrol.apiserver.k8s.io"}

// resetParallelism bounds the requests a reset has in flight.
const resetParallelism = 8

func takeSnapshot(ctx context.Context, cfg *rest.Config) (*snapshot, error) {
	s := &snapshot{uids: map[types.UID]bool{}, namespaces: map[string]bool{}}
	var mu sync.Mutex
	err := eachObject(ctx, cfg, func(r metav1.APIResource, gvr schema.GroupVersionResource, o metav1.PartialObjectMetadata) {
		mu.Lock()
		defer mu.Unlock()
		s.uids[o.UID] = true
		if gvr.Group == "" && gvr.Resource == "namespaces" {
			s.namespaces[o.Name] = true
		}
	})
	return s, err
}

// reset brings the control plane back to its snapshot, as a new one
// would be, in seconds rather than a boot: it deletes every namespace
// made since, with everything in it, and every cluster-scoped object made
// since (finalizers removed, since no controller is left to honour them).
// What tests make in the fresh control plane's own namespaces (default,
// kube-system, ...) stays, and so do the changes they make to its own
// objects: tests that share a control plane keep to namespaces of their
// own, and reset fails if one of Vigil's objects is left.
func (c *Cluster) reset(ctx context.Context) error {
	meta, err := metadata.NewForConfig(c.Config)
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		return err
	}
	// What was made since the snapshot, by resource and namespace.
	type where struct {
		gvr       schema.GroupVersionResource
		namespace string
	}
	var mu sync.Mutex
	made := map[where][]metav1.PartialObjectMetadata{}
	var namespaces []string
	err = eachObject(ctx, c.Config, func(r metav1.APIResource, gvr schema.GroupVersionResource, o metav1.PartialObjectMetadata) {
		if c.fresh.uids[o.UID] || (r.Namespaced && c.fresh.namespaces[o.Namespace]) {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if gvr.Group == "" && gvr.Resource == "namespaces" {
			namespaces = append(namespaces, o.Name)
			return
		}
		made[where{gvr, o.Namespace}] = append(made[where{gvr, o.Namespace}], o)
	})
	if err != nil {
		return err
	}

	// Namespaced objects first, then the namespaces, then the rest: a
	// CRD made by a test goes once its objects have.
	// At once, and dependents too (no garbage collector runs to delete
	// them, but they are among what is deleted).
	background := metav1.DeletePropagationBackground
	now := metav1.DeleteOptions{GracePeriodSeconds: new(int64), PropagationPolicy: &background}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(resetParallelism)
	var clusterScoped []where
	for w, objs := range made {
		if w.namespace == "" {
			clusterScoped = append(clusterScoped, w)
			continue
		}
		g.Go(func() error {
			r := meta.Resource(w.gvr).Namespace(w.namespace)
			if err := unfinalize(gctx, r, objs); err != nil {
				return err
			}
			err := r.DeleteCollection(gctx, now, metav1.ListOptions{})
			if apierrors.IsMethodNotSupported(err) || apierrors.IsNotFound(err) {
				return deleteEach(gctx, r, objs, now)
			}
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return fmt.Errorf("testenv: resetting the control plane: %w", err)
	}
	g, gctx = errgroup.WithContext(ctx)
	g.SetLimit(resetParallelism)
	for _, ns := range namespaces {
		g.Go(func() error { return removeNamespace(gctx, cs, ns) })
	}
	for _, w := range clusterScoped {
		g.Go(func() error {
			r := meta.Resource(w.gvr)
			if err := unfinalize(gctx, r, made[w]); err != nil {
				return err
			}
			return deleteEach(gctx, r, made[w], now)
		})
	}
	if err := g.Wait(); err != nil {
		return fmt.Errorf("testenv: resetting the control plane: %w", err)
	}
	return c.checkReset(ctx)
}

// checkReset fails if any of Vigil's objects is left after a reset, or a
// namespace made since the snapshot.
func (c *Cluster) checkReset(ctx context.Context) error {
	var mu sync.Mutex
	var left []string
	err := eachObject(ctx, c.Config, func(r metav1.APIResource, gvr schema.GroupVersionResource, o metav1.PartialObjectMetadata) {
		isNamespace := gvr.Group == "" && gvr.Resource == "namespaces"
		if c.fresh.uids[o.UID] || (gvr.Group != v1.GroupVersion.Group && !isNamespace) {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		left = append(left, fmt.Sprintf("%s %s/%s", gvr.Resource, o.Namespace, o.Name))
	})
	if err != nil {
		return err
	}
	if len(left) > 0 {
		slices.Sort(left)
		return fmt.Errorf("testenv: a reset left %d objects (tests that share a control plane make theirs in namespaces of their own): %s",
			len(left), strings.Join(left[:min(len(left), 10)], ", "))
	}
	return nil
}

// eachObject lists every object of every resource the API server can
// list and delete, but for those it keeps by itself, and calls fn on each,
// from several goroutines at once.
func eachObject(ctx context.Context, cfg *rest.Config,
	fn func(metav1.APIResource, schema.GroupVersionResource, metav1.PartialObjectMetadata)) error {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return err
	}
	meta, err := metadata.NewForConfig(cfg)
	if err != nil {
		return err
	}
	lists, err := dc.ServerPreferredResources()
	if err != nil {
		return fmt.Errorf("testenv: discovering the API server's resources: %w", err)
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(resetParallelism)
	for _, list := range discovery.FilteredBy(discovery.SupportsAllVerbs{Verbs: []string{"list", "delete"}}, lists) {
		gv, err := schema.ParseGroupVersion(list.GroupVersion)
		if err != nil {
			return err
		}
		if slices.Contains(apiServerGroups, gv.Group) {
			continue
		}
		for _, r := range list.APIResources {
			gvr := gv.WithResource(r.Name)
			g.Go(func() error {
				objs, err := meta.Resource(gvr).List(gctx, metav1.ListOptions{})
				if apierrors.IsNotFound(err) {
					return nil // a CRD deleted meanwhile
				}
				if err != nil {
					return fmt.Errorf("listing %s: %w", gvr, err)
				}
				for _, o := range objs.Items {
					fn(r, gvr, o)
				}
				return nil
			})
		}
	}
	return g.Wait()
}

// unfinalize removes the finalizers of the objects that have any.
func unfinalize(ctx context.Context, r metadata.ResourceInterface, objs []metav1.PartialObjectMetadata) error {
	for _, o := range objs {
		if len(o.Finalizers) == 0 {
			continue
		}
		_, err := r.Patch(ctx, o.Name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("removing the finalizers of %s: %w", o.Name, err)
		}
	}
	return nil
}

func deleteEach(ctx context.Context, r metadata.ResourceInterface, objs []metav1.PartialObjectMetadata, opts metav1.DeleteOptions) error {
	for _, o := range objs {
		if err := r.Delete(ctx, o.Name, opts); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting %s: %w", o.Name, err)
		}
	}
	return nil
}

// removeNamespace deletes an emptied namespace and does what the
// namespace controller, which a test's control plane does not run, would
// do next: finalizes it, so that it is gone and its name free again.
func removeNamespace(ctx context.Context, cs kubernetes.Interface, name string) error {
	namespaces := cs.CoreV1().Namespaces()
	for {
		err := namespaces.Delete(ctx, name, metav1.DeleteOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("deleting namespace %s: %w", name, err)
		}
		ns, err := namespaces.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		if len(ns.Spec.Finalizers) > 0 {
			ns.Spec.Finalizers = nil
			if _, err := namespaces.Finalize(ctx, ns, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
				return fmt.Errorf("finalizing namespace %s: %w", name, err)
			}
		}
		select {
		case <-ctx.Done():
			return errors.Join(fmt.Errorf("namespace %s is not gone", name), ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}
