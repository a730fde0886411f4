package maintenance

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/words"
)

// MaxSnooze bounds a snooze: longer quiet is a MaintenanceWindow in git.
const MaxSnooze = 31 * 24 * time.Hour

// SnoozeName is the name of the window that snoozes the check: one per
// check, so snoozing again moves it rather than adding another.
func SnoozeName(check string) string {
	const prefix = "snooze-"
	name := prefix + check
	if len(name) <= 253 {
		return name
	}
	// Too long for a name: cut, and tell cut names apart by a hash.
	h := fnv.New32a()
	_, _ = h.Write([]byte(check))
	return fmt.Sprintf("%s-%08x", name[:253-9], h.Sum32())
}

// Snooze is the one-off window that holds the check's notifications from
// now for d, owned by the check (deleting the check deletes it).
func Snooze(c *v1.Check, now time.Time, d time.Duration) *v1.MaintenanceWindow {
	from, to := metav1.NewTime(now.UTC().Truncate(time.Second)), metav1.NewTime(now.UTC().Truncate(time.Second).Add(d))
	return &v1.MaintenanceWindow{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: c.Namespace, Name: SnoozeName(c.Name),
			Labels: map[string]string{v1.LabelSnooze: "true"},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: v1.GroupVersion.String(), Kind: "Check", Name: c.Name, UID: c.UID,
			}},
		},
		Spec: v1.MaintenanceWindowSpec{CheckSelection: v1.CheckSelection{Checks: []string{c.Name}}, From: &from, To: &to},
	}
}

// IsSnooze reports whether mw is a check's snooze window, as Snooze makes
// it: labelled, one-off, for the one check its name is made from. There is
// at most one per check, so snoozes do not count against a namespace's
// window limit (a window labelled a snooze that is not one does).
func IsSnooze(mw *v1.MaintenanceWindow) bool {
	s := &mw.Spec
	return mw.Labels[v1.LabelSnooze] == "true" && len(s.Checks) == 1 && mw.Name == SnoozeName(s.Checks[0]) &&
		s.Schedule == nil && s.Selector == nil && len(s.Tags) == 0
}

// Counted are the windows that count against a namespace's window limit:
// those that are not snoozes. Items is reordered: the snoozes last.
func Counted(items []v1.MaintenanceWindow) (counted, snoozes []v1.MaintenanceWindow) {
	i := 0
	for j := range items {
		if !IsSnooze(&items[j]) {
			items[i], items[j] = items[j], items[i]
			i++
		}
	}
	return items[:i], items[i:]
}

// ErrSnoozeTaken: the name of the check's snooze window belongs to a
// window that is not a snooze.
var ErrSnoozeTaken = errors.New("the snooze window's name is taken")

// ApplySnooze holds the check's notifications from now for d: it creates
// the check's snooze window, or moves the one it has. r reads the window
// when it exists (uncached: the caller may have just written it).
func ApplySnooze(ctx context.Context, w client.Writer, r client.Reader, c *v1.Check, now time.Time, d time.Duration) (*v1.MaintenanceWindow, error) {
	if d < time.Minute || d > MaxSnooze {
		return nil, fmt.Errorf("a snooze lasts from 1 minute to %s", words.Duration(MaxSnooze))
	}
	want := Snooze(c, now, d)
	var out *v1.MaintenanceWindow
	// Another snooze of the check, or the manager deleting the one that
	// ended, may come in between: create or move again.
	err := retry.OnError(retry.DefaultRetry, func(err error) bool {
		return apierrors.IsConflict(err) || apierrors.IsNotFound(err) || apierrors.IsAlreadyExists(err)
	}, func() error {
		out = want.DeepCopy()
		err := w.Create(ctx, out)
		if !apierrors.IsAlreadyExists(err) {
			return err
		}
		cur := &v1.MaintenanceWindow{}
		if err := r.Get(ctx, client.ObjectKeyFromObject(want), cur); err != nil {
			return err
		}
		if cur.Labels[v1.LabelSnooze] != "true" {
			return fmt.Errorf("%w: MaintenanceWindow %s exists and is not a snooze; it is left as it is", ErrSnoozeTaken, cur.Name)
		}
		cur.Spec, cur.OwnerReferences = want.Spec, want.OwnerReferences
		out = cur
		return w.Update(ctx, cur)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// EndSnooze ends the check's snooze, if it has one: what it held is told,
// as at any window's end.
func EndSnooze(ctx context.Context, w client.Writer, r client.Reader, c *v1.Check) error {
	mw := &v1.MaintenanceWindow{}
	err := r.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: SnoozeName(c.Name)}, mw)
	if apierrors.IsNotFound(err) || (err == nil && mw.Labels[v1.LabelSnooze] != "true") {
		return nil
	}
	if err != nil {
		return err
	}
	return client.IgnoreNotFound(w.Delete(ctx, mw, client.Preconditions{UID: &mw.UID}))
}
