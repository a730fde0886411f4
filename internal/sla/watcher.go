package sla

import (
	"context"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/checks"
)

// DefaultEvery is how often the leader judges the SLAs by default: a
// breach is a trend over days, not an outage to page on within seconds.
const DefaultEvery = 5 * time.Minute

// Watcher judges every check with an SLA, on the leader.
type Watcher struct {
	// Client lists Checks from the informer cache.
	Client client.Client
	Checks *checks.Door
	// Show hands a check's SLAMet condition to the projector, which
	// writes status (nil: remove it).
	Show  func(c *v1.Check, cond *metav1.Condition)
	Clock clock.WithTicker
	// Every is how often the checks are judged (DefaultEvery when 0).
	Every time.Duration
	Log   logr.Logger
}

// NeedLeaderElection: the leader alone judges, so a breach is told once.
func (w *Watcher) NeedLeaderElection() bool { return true }

// Start judges the checks every w.Every until ctx ends.
func (w *Watcher) Start(ctx context.Context) error {
	every := w.Every
	if every <= 0 {
		every = DefaultEvery
	}
	if !w.Checks.WaitForSync(ctx) {
		return nil
	}
	t := w.Clock.NewTicker(every)
	defer t.Stop()
	for {
		w.Run(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C():
		}
	}
}

// Run judges every check with an SLA once.
func (w *Watcher) Run(ctx context.Context) {
	var list v1.CheckList
	if err := w.Client.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
		w.Log.Error(err, "listing Checks to judge their SLAs")
		return
	}
	told, err := w.Checks.SLABreaches(ctx)
	if err != nil {
		w.Log.Error(err, "reading the SLA breaches told")
		return
	}
	var dropped []types.UID
	for i := range list.Items {
		c := &list.Items[i]
		if c.Spec.SLA == nil || !c.DeletionTimestamp.IsZero() {
			if _, ok := told[c.UID]; ok {
				dropped = append(dropped, c.UID)
			}
			if meta.FindStatusCondition(c.Status.Conditions, v1.ConditionSLAMet) != nil {
				w.Show(c, nil)
			}
			continue
		}
		if err := w.judge(ctx, c, told[c.UID].Breach); err != nil {
			w.Log.Error(err, "judging an SLA", "namespace", c.Namespace, "check", c.Name)
		}
	}
	if err := w.Checks.ForgetSLA(ctx, dropped...); err != nil {
		w.Log.Error(err, "forgetting the breaches of SLAs removed")
	}
}

// judge holds one check's runs to its SLA; told is the breach its
// Channels last heard of. A paused check is not judged: its owner asked
// for quiet.
func (w *Watcher) judge(ctx context.Context, c *v1.Check, told string) error {
	if c.Status.State == v1.CheckStatePaused {
		return nil
	}
	rules, err := RulesOf(c.Spec.SLA)
	if err != nil {
		return err
	}
	st, err := w.Checks.RunStats(ctx, c, rules.Window)
	if err != nil {
		return err
	}
	v, judged := Judge(rules, st)
	cond := Condition(v, judged, c.Generation)
	w.Show(c, &cond)
	if !judged || v.Breach == told {
		return nil
	}
	news, err := w.Checks.JudgeSLA(ctx, c, v)
	if news {
		w.Log.Info("SLA verdict told", "namespace", c.Namespace, "check", c.Name, "breach", v.Breach, "detail", v.Detail)
	}
	return err
}
