// Package coverage decides which CronJobs get a Check, and with what
// settings: the CronJob's own annotations, the namespace's CronJobPolicies
// and the cluster's ClusterCronJobPolicies, in that order of precedence
// (docs/cronjobs.md). It is pure: the CronJob controller gives it what the
// cache holds and writes what it decides.
package coverage

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
)

// Annotations on a CronJob. The first five predate the policies and keep
// their meaning; each one set wins over any policy for its field.
const (
	// AnnotationCheck "true" gives the CronJob a Check without a policy;
	// "false" opts it out of every policy.
	AnnotationCheck = "monitoring.vigil.dev/check"
	// AnnotationGrace is the grace period: seconds ("600") or a duration
	// ("10m"); default one hour, at least one minute.
	AnnotationGrace = "monitoring.vigil.dev/grace"
	// AnnotationChannels assigns Channels: comma-separated object names, or
	// "*" for all.
	AnnotationChannels = "monitoring.vigil.dev/channels"
	// AnnotationTags are the check's tags, space-separated.
	AnnotationTags = "monitoring.vigil.dev/tags"
	// AnnotationName is the check's display name; default the CronJob's.
	AnnotationName = "monitoring.vigil.dev/name"
	// AnnotationMaxSuspended is how long the CronJob may stay suspended
	// before its check goes down ("24h").
	AnnotationMaxSuspended = "monitoring.vigil.dev/max-suspended"
	// AnnotationAlertOnOverlap "true" makes a run that starts while an
	// earlier one still runs a failure of the check.
	AnnotationAlertOnOverlap = "monitoring.vigil.dev/alert-on-overlap"
)

// Kinds of policy, as they appear in a policy reference ("Kind/name").
const (
	KindNamespaced = "CronJobPolicy"
	KindCluster    = "ClusterCronJobPolicy"
)

// DefaultGrace is a CronJob check's grace when nothing sets it.
const DefaultGrace = time.Hour

// maxAlsoSelectedBy bounds the other policies a decision names.
const maxAlsoSelectedBy = 5

// Policy is a CronJobPolicy or ClusterCronJobPolicy, compiled.
type Policy struct {
	Kind, Name string
	// Namespace is a CronJobPolicy's namespace.
	Namespace string
	// Namespaces selects a ClusterCronJobPolicy's namespaces.
	Namespaces labels.Selector
	// CronJobs selects the CronJobs it covers.
	CronJobs labels.Selector
	Defaults v1.CronJobDefaults
}

// Ref is how the policy is named in a Check's status: "Kind/name".
func (p *Policy) Ref() string { return p.Kind + "/" + p.Name }

// Namespaced compiles a CronJobPolicy; the error is a selector that does
// not parse.
func Namespaced(p *v1.CronJobPolicy) (Policy, error) {
	sel, err := selector(p.Spec.Selector)
	if err != nil {
		return Policy{}, fmt.Errorf("spec.selector: %w", err)
	}
	return Policy{Kind: KindNamespaced, Name: p.Name, Namespace: p.Namespace, CronJobs: sel, Defaults: p.Spec.CronJobDefaults}, nil
}

// Cluster compiles a ClusterCronJobPolicy.
func Cluster(p *v1.ClusterCronJobPolicy) (Policy, error) {
	ns, err := metav1.LabelSelectorAsSelector(&p.Spec.NamespaceSelector)
	if err != nil {
		return Policy{}, fmt.Errorf("spec.namespaceSelector: %w", err)
	}
	sel, err := selector(p.Spec.Selector)
	if err != nil {
		return Policy{}, fmt.Errorf("spec.selector: %w", err)
	}
	return Policy{Kind: KindCluster, Name: p.Name, Namespaces: ns, CronJobs: sel, Defaults: p.Spec.CronJobDefaults}, nil
}

// selector reads an optional label selector: absent selects everything.
func selector(s *metav1.LabelSelector) (labels.Selector, error) {
	if s == nil {
		return labels.Everything(), nil
	}
	return metav1.LabelSelectorAsSelector(s)
}

// CronJob is what the decision reads of a CronJob and its namespace.
type CronJob struct {
	Namespace, Name string
	Labels          map[string]string
	Annotations     map[string]string
	// NamespaceLabels are its namespace's labels (for cluster policies).
	NamespaceLabels map[string]string
}

// Selects says whether the policy selects the CronJob.
func (p *Policy) Selects(cj CronJob) bool {
	if p.Kind == KindNamespaced {
		if p.Namespace != cj.Namespace {
			return false
		}
	} else if !p.Namespaces.Matches(labels.Set(cj.NamespaceLabels)) {
		return false
	}
	return p.CronJobs.Matches(labels.Set(cj.Labels))
}

// Decision is whether a CronJob gets a Check, and with what.
type Decision struct {
	// Covered: the CronJob gets a Check.
	Covered bool
	// Policy is the policy that applies; nil when only the annotation
	// covers the CronJob (or nothing does).
	Policy *Policy
	// AlsoSelectedBy are the other policies of its level that select the
	// CronJob (at most five).
	AlsoSelectedBy []string
	Settings       Settings
}

// Settings are what a Check made for a CronJob gets from policy and
// annotations.
type Settings struct {
	Name     string
	Grace    time.Duration
	Channels []string
	Tags     string
	// MaxSuspended is how long the CronJob may stay suspended; 0: forever.
	MaxSuspended time.Duration
	// AlertOnOverlap: runs that overlap are a failure.
	AlertOnOverlap bool
	// Alert holds the alert-policy fields the policy sets.
	Alert v1.AlertPolicy
	// PolicyFields and AnnotationFields are the spec fields (JSON names)
	// the policy and the annotations set.
	PolicyFields, AnnotationFields []string
}

// Decide decides for one CronJob, given the policies of its namespace and
// of the cluster (any order). An opt-out annotation wins over every
// policy; a namespace's policies win over the cluster's; of two policies
// of one level the first by name applies, and the decision names the
// others.
func Decide(cj CronJob, namespaced, cluster []Policy) Decision {
	var d Decision
	switch cj.Annotations[AnnotationCheck] {
	case "false":
		return d
	case "true":
		d.Covered = true
	}
	for _, level := range [][]Policy{namespaced, cluster} {
		var selecting []*Policy
		for i := range level {
			if level[i].Selects(cj) {
				selecting = append(selecting, &level[i])
			}
		}
		if len(selecting) == 0 {
			continue
		}
		slices.SortFunc(selecting, func(a, b *Policy) int { return strings.Compare(a.Name, b.Name) })
		d.Covered, d.Policy = true, selecting[0]
		for _, p := range selecting[1:min(len(selecting), maxAlsoSelectedBy+1)] {
			d.AlsoSelectedBy = append(d.AlsoSelectedBy, p.Ref())
		}
		break
	}
	if d.Covered {
		d.Settings = settings(cj, d.Policy)
	}
	return d
}

// settings merges the policy's defaults and the CronJob's annotations:
// field by field, the annotation wins.
func settings(cj CronJob, p *Policy) Settings {
	s := Settings{Name: cj.Name, Grace: DefaultGrace}
	if p != nil {
		d := p.Defaults
		if d.Grace != nil {
			s.Grace = clampGrace(d.Grace.Duration)
			s.PolicyFields = append(s.PolicyFields, "grace")
		}
		if len(d.Channels) > 0 {
			s.Channels = slices.Clone(d.Channels)
			s.PolicyFields = append(s.PolicyFields, "channels")
		}
		if tags := strings.Fields(d.Tags); len(tags) > 0 {
			s.Tags = strings.Join(tags, " ")
			s.PolicyFields = append(s.PolicyFields, "tags")
		}
		if d.MaxSuspended != nil {
			s.MaxSuspended = d.MaxSuspended.Duration
			s.PolicyFields = append(s.PolicyFields, "maxSuspended")
		}
		if d.AlertOnOverlap {
			s.AlertOnOverlap = true
			s.PolicyFields = append(s.PolicyFields, "alertOnOverlap")
		}
		s.Alert = *d.AlertPolicy.DeepCopy()
		s.PolicyFields = append(s.PolicyFields, AlertFields(&s.Alert)...)
	}
	a := cj.Annotations
	if v, ok := a[AnnotationName]; ok && strings.TrimSpace(v) != "" {
		s.Name = strings.TrimSpace(v)
		s.AnnotationFields = append(s.AnnotationFields, "name")
	}
	if v, ok := a[AnnotationGrace]; ok {
		s.Grace = ParseGrace(v)
		s.AnnotationFields = append(s.AnnotationFields, "grace")
	}
	if v, ok := a[AnnotationChannels]; ok {
		s.Channels = nil
		for _, ch := range strings.Split(v, ",") {
			if ch = strings.TrimSpace(ch); ch != "" {
				s.Channels = append(s.Channels, ch)
			}
		}
		s.AnnotationFields = append(s.AnnotationFields, "channels")
	}
	if v, ok := a[AnnotationTags]; ok {
		s.Tags = strings.Join(strings.Fields(v), " ")
		s.AnnotationFields = append(s.AnnotationFields, "tags")
	}
	if v, ok := a[AnnotationMaxSuspended]; ok {
		s.MaxSuspended = parseMaxSuspended(v)
		s.AnnotationFields = append(s.AnnotationFields, "maxSuspended")
	}
	if v, ok := a[AnnotationAlertOnOverlap]; ok {
		s.AlertOnOverlap = strings.TrimSpace(v) == "true"
		s.AnnotationFields = append(s.AnnotationFields, "alertOnOverlap")
	}
	s.PolicyFields = slices.DeleteFunc(s.PolicyFields, func(f string) bool { return slices.Contains(s.AnnotationFields, f) })
	return s
}

// alertField is an alert-policy field a policy can set: its JSON name,
// whether a policy sets it, and how it is copied.
type alertField struct {
	name string
	set  func(*v1.AlertPolicy) bool
	copy func(dst, src *v1.AlertPolicy)
}

// alertFields are the alert-policy fields a policy can set: every one.
var alertFields = []alertField{
	{"failureThreshold", func(a *v1.AlertPolicy) bool { return a.FailureThreshold != 0 },
		func(d, s *v1.AlertPolicy) { d.FailureThreshold = s.FailureThreshold }},
	{"recoveryThreshold", func(a *v1.AlertPolicy) bool { return a.RecoveryThreshold != 0 },
		func(d, s *v1.AlertPolicy) { d.RecoveryThreshold = s.RecoveryThreshold }},
	{"maxRuntime", func(a *v1.AlertPolicy) bool { return a.MaxRuntime != nil },
		func(d, s *v1.AlertPolicy) { d.MaxRuntime = s.MaxRuntime }},
	{"minRuntime", func(a *v1.AlertPolicy) bool { return a.MinRuntime != nil },
		func(d, s *v1.AlertPolicy) { d.MinRuntime = s.MinRuntime }},
	{"realertInterval", func(a *v1.AlertPolicy) bool { return a.RealertInterval != nil },
		func(d, s *v1.AlertPolicy) { d.RealertInterval = s.RealertInterval }},
	{"escalation", func(a *v1.AlertPolicy) bool { return a.Escalation != nil },
		func(d, s *v1.AlertPolicy) { d.Escalation = s.Escalation }},
	{"anomaly", func(a *v1.AlertPolicy) bool { return a.Anomaly != nil },
		func(d, s *v1.AlertPolicy) { d.Anomaly = s.Anomaly }},
	{"dependsOn", func(a *v1.AlertPolicy) bool { return a.DependsOn != nil },
		func(d, s *v1.AlertPolicy) { d.DependsOn = s.DependsOn }},
	{"sla", func(a *v1.AlertPolicy) bool { return a.SLA != nil },
		func(d, s *v1.AlertPolicy) { d.SLA = s.SLA }},
}

// AlertFields are the JSON names of the alert-policy fields set in a.
func AlertFields(a *v1.AlertPolicy) []string {
	var out []string
	for _, f := range alertFields {
		if f.set(a) {
			out = append(out, f.name)
		}
	}
	return out
}

// ApplyAlert writes into dst the alert-policy fields src sets, and clears
// those of owned (fields a policy set before) that src no longer sets:
// fields no policy ever set are left as written on the Check by hand.
func ApplyAlert(dst *v1.AlertPolicy, src *v1.AlertPolicy, owned []string) {
	for _, f := range alertFields {
		if f.set(src) || slices.Contains(owned, f.name) {
			f.copy(dst, src)
		}
	}
}

// ParseGrace reads the grace annotation; anything unreadable is the
// default, and the result is within the API's 1 minute .. 365 days.
func ParseGrace(s string) time.Duration {
	d, ok := parseDuration(s)
	if !ok {
		d = DefaultGrace
	}
	return clampGrace(d)
}

func clampGrace(d time.Duration) time.Duration {
	return min(max(d, time.Minute), 365*24*time.Hour).Truncate(time.Second)
}

// parseMaxSuspended reads the max-suspended annotation; unreadable or
// not positive is 0 (no limit), and the limit is at least a minute.
func parseMaxSuspended(s string) time.Duration {
	d, ok := parseDuration(s)
	if !ok || d <= 0 {
		return 0
	}
	return max(d, time.Minute).Truncate(time.Second)
}

// parseDuration reads seconds ("600") or a Go duration ("10m").
func parseDuration(s string) (time.Duration, bool) {
	s = strings.TrimSpace(s)
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		if n > int64(366*24*time.Hour/time.Second) || n < 0 {
			return 0, false
		}
		return time.Duration(n) * time.Second, true
	}
	d, err := time.ParseDuration(s)
	return d, err == nil
}
