package controller

import (
	"cmp"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/project"
)

// What the reconcilers of the kinds a namespace's limit counts
// (project.ObjectKinds) share: the limit, and how an object past it says so.

// pastLimitRecheck is how soon an object past its namespace's limit is
// looked at again: it comes within the limit when an older one is deleted
// or the limit raised, which no event of its own tells.
const pastLimitRecheck = time.Minute

// recheckPastLimit is d, or pastLimitRecheck when d is zero.
func recheckPastLimit(d time.Duration) time.Duration { return cmp.Or(d, pastLimitRecheck) }

// objectLimit is the namespace's limit of the kind: limit's (project.Limits),
// or project.DefaultObjectLimits' when limit is nil.
func objectLimit(limit func(string, project.ObjectKind) int, namespace string, kind project.ObjectKind) int {
	if limit == nil {
		return project.DefaultObjectLimits[kind]
	}
	return limit(namespace, kind)
}

// pastLimitReady is the Ready condition of an object past its namespace's
// limit.
func pastLimitReady(generation int64, message string) metav1.Condition {
	return metav1.Condition{Type: v1.ConditionReady, Status: metav1.ConditionFalse, Reason: v1.ReasonLimitExceeded,
		Message: message, ObservedGeneration: generation}
}

// wasPastLimit reports whether the conditions said the object was past
// its namespace's limit.
func wasPastLimit(conditions []metav1.Condition) bool {
	c := meta.FindStatusCondition(conditions, v1.ConditionReady)
	return c != nil && c.Reason == v1.ReasonLimitExceeded
}

// recordPastLimit records the Warning Event of an object newly past its
// namespace's limit (rec nil: none).
func recordPastLimit(rec recorder.EventRecorder, obj runtime.Object, message string) {
	if rec != nil {
		rec.Eventf(obj, nil, corev1.EventTypeWarning, v1.ReasonLimitExceeded, "Count", "%s", message)
	}
}
