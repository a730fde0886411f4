// Package access asks Kubernetes what a person signed in to the dashboard
// may do in a project. Vigil keeps no permissions of its own: for a
// person's name and groups (from their identity provider's ID token) it
// creates a SubjectAccessReview, so the cluster's RBAC (and any other
// authorizer the API server runs) decides, and the ClusterRoles people are
// bound to are the only thing an administrator manages.
//
// Two questions are asked, on checks.monitoring.vigil.dev in a namespace:
// may they list checks there (the project opens, read-only), and may they
// update checks there (pause, resume, snooze, acknowledge, test a
// Channel). Nothing else grants anything.
//
// Answers are kept for a short while, so that a board or a page does not
// ask again for each request: a yes for Allowed (30 seconds by default),
// so a RoleBinding removed is felt within that; a no for Denied (2
// minutes), since most of a fleet's projects say no to most people and a
// grant felt a little later harms no one. The reviews go through a client
// of their own with its own rate (Options), so people browsing cannot take
// the share of the API server the controllers need.
package access

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"sync"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/cache"
	"k8s.io/utils/clock"

	"golang.org/x/sync/singleflight"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
)

// Verb is what a person asks to do with a project's checks.
type Verb string

const (
	// View opens a project's board and check pages, read-only: "list
	// checks" in its namespace.
	View Verb = "list"
	// Operate pauses, resumes, snoozes and acknowledges checks and tests
	// Channels: "update checks" in the namespace.
	Operate Verb = "update"
)

// Person is who is asking, as Kubernetes RBAC names them.
type Person struct {
	Username string
	Groups   []string
}

// Reviewer creates SubjectAccessReviews: client-go's
// AuthorizationV1().SubjectAccessReviews().
type Reviewer interface {
	Create(ctx context.Context, r *authorizationv1.SubjectAccessReview, opts metav1.CreateOptions) (*authorizationv1.SubjectAccessReview, error)
}

// Defaults of an Authorizer.
const (
	DefaultAllowed    = 30 * time.Second
	DefaultDenied     = 2 * time.Minute
	DefaultMaxAnswers = 100_000
)

// Authorizer answers May, from its memory or a SubjectAccessReview.
type Authorizer struct {
	Reviews Reviewer
	Clock   clock.PassiveClock
	// Allowed and Denied are how long a yes and a no are kept
	// (DefaultAllowed and DefaultDenied when 0).
	Allowed, Denied time.Duration
	// MaxAnswers bounds the answers kept (DefaultMaxAnswers when 0): about
	// 100 bytes each.
	MaxAnswers int

	once    sync.Once
	answers *cache.LRUExpireCache // of bool, the least recently used going first
	flight  singleflight.Group
}

// May reports whether p may do v with the checks of namespace ("" asks
// about every namespace at once: a ClusterRoleBinding's grant).
func (a *Authorizer) May(ctx context.Context, p Person, namespace string, v Verb) (bool, error) {
	key := questionKey(p, namespace, v)
	if allowed, ok := a.kept().Get(key); ok {
		return allowed.(bool), nil
	}
	got, err, _ := a.flight.Do(key, func() (any, error) {
		review, err := a.Reviews.Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: p.Username,
			// The API server puts every authenticated user in
			// system:authenticated; a review asks only about the groups
			// it is given.
			Groups: append(slices.Clone(p.Groups), authenticated),
			ResourceAttributes: &authorizationv1.ResourceAttributes{
				Namespace: namespace, Verb: string(v), Group: v1.GroupVersion.Group, Resource: "checks",
			},
		}}, metav1.CreateOptions{})
		if err != nil {
			return false, fmt.Errorf("asking Kubernetes whether %s may %s checks in %q: %w", p.Username, v, namespace, err)
		}
		allowed := review.Status.Allowed && !review.Status.Denied
		keep := cmp.Or(a.Denied, DefaultDenied)
		if allowed {
			keep = cmp.Or(a.Allowed, DefaultAllowed)
		}
		a.kept().Add(key, allowed, keep)
		return allowed, nil
	})
	if err != nil {
		return false, err
	}
	return got.(bool), nil
}

// kept is the answers' cache, made at first use.
func (a *Authorizer) kept() *cache.LRUExpireCache {
	a.once.Do(func() {
		var clk clock.PassiveClock = clock.RealClock{}
		if a.Clock != nil {
			clk = a.Clock
		}
		a.answers = cache.NewLRUExpireCacheWithClock(cmp.Or(a.MaxAnswers, DefaultMaxAnswers), clk)
	})
	return a.answers
}

// questionKey names a question: who (name and groups, in any order),
// where, and what.
func questionKey(p Person, namespace string, v Verb) string {
	groups := slices.Clone(p.Groups)
	slices.Sort(groups)
	h := sha256.New()
	for _, part := range append([]string{p.Username, namespace, string(v)}, groups...) {
		h.Write([]byte(part))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}
