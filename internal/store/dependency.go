package store

import (
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/vigil-operator/vigil/internal/monitor"
)

// Dependencies hold notifications the way a maintenance window does
// (maintenance.go), for a reason the store reads from itself: while a
// check the check depends on (its parent) is down, the check's down, its
// re-alerts, escalation and failure notices are recorded but told to
// nobody; its flip names the parent (flips.held). When no parent is down
// any more, the next write of the check tells the Channels what they have
// not heard, as at a window's end (tellHeld): the down, if the check is
// still down. So 30 jobs of a host that is down page nobody; each one
// still down when the host is back pages once.
//
// Two differences from a window. An up is never held when the Channels
// were told of the down: the incident it resolves should not stay open
// for as long as the parent is down. And the store cannot see a parent
// recover from the dependent's row: a held check is looked at again every
// DependencyRecheck (setNextChange), and its next write finds the parent
// up, or deleted, or no longer its parent.
//
// Which checks are its parents is the caller's to say (Target.Dependencies,
// resolved from spec.dependsOn by package dependency, which refuses
// cycles: two checks down at once, each holding the other, would tell
// nobody anything). The parents are read only when they can matter: when
// the check is down, about to be, or held.

// Dependencies are the checks a check depends on.
type Dependencies interface {
	// Parents are the names of the checks of its namespace it depends on
	// (none when spec.dependsOn is refused).
	Parents() []string
}

// Dependency is a parent that holds a check's notifications: down since
// Since.
type Dependency struct {
	Parent string
	Since  time.Time
}

func (d Dependency) same(o Dependency) bool { return d.Parent == o.Parent && d.Since.Equal(o.Since) }

// DependencyRecheck is how often a check whose notifications a parent
// holds is looked at again: how late, at most, the Channels hear of its
// down once the parent is back.
const DependencyRecheck = 30 * time.Second

// heldParent prefixes Flip.Held for a flip a parent held: "(" is in no
// Kubernetes name, so in no window's.
const heldParent = "(depends on) "

// HeldByParent is the parent that held the flip's notification, or "".
func (f *Flip) HeldByParent() string {
	name, _ := strings.CutPrefix(f.Held, heldParent)
	if name == f.Held {
		return ""
	}
	return name
}

// parentDown is the first of the check's parents, by name, that is down:
// as this transaction has it when it holds the parent's row (a deadline
// pass observes parents before their dependents, checks.Door.Observe), as
// the store has it otherwise. None when the check has no parent, or they
// are moot: it is not down, was not, and holds no up for Channels told of
// its down.
func (t *txn) parentDown(r *row, tg *Target, facts monitor.Facts) (Dependency, error) {
	if tg.Dependencies == nil || (facts.State != monitor.StatusDown && r.Facts.State != monitor.StatusDown &&
		(!r.held || r.alertSince.IsZero())) {
		return Dependency{}, nil
	}
	names := tg.Dependencies.Parents()
	if len(names) == 0 {
		return Dependency{}, nil
	}
	var ask []any
	var held Dependency
	for _, name := range names {
		if p := t.rowNamed(tg.Namespace, name); p != nil {
			if p.Facts.State == monitor.StatusDown && (held.Parent == "" || name < held.Parent) {
				held = Dependency{Parent: name, Since: p.Facts.StateSince}
			}
			continue
		}
		ask = append(ask, name)
	}
	if len(ask) == 0 {
		return held, nil
	}
	rows, err := t.query(`SELECT name, state_since FROM checks WHERE namespace = ? AND state = '`+string(monitor.StatusDown)+
		`' AND name IN (`+placeholders(len(ask))+`)`, append([]any{tg.Namespace}, ask...)...)
	if err != nil {
		return Dependency{}, fmt.Errorf("reading the checks %s/%s depends on: %w", tg.Namespace, tg.Name, err)
	}
	defer rows.Close()
	for rows.Next() {
		var name string
		var since sql.NullInt64
		if err := rows.Scan(&name, &since); err != nil {
			return Dependency{}, err
		}
		if held.Parent == "" || name < held.Parent {
			held = Dependency{Parent: name, Since: fromMicros(since)}
		}
	}
	return held, rows.Err()
}

// rowNamed is the row of the check of that name this transaction holds,
// if it holds one.
func (t *txn) rowNamed(namespace, name string) *row {
	if len(t.byName) != len(t.rows) { // rows were added since it was built
		t.byName = make(map[string]*row, len(t.rows))
		for _, r := range t.rows {
			t.byName[r.Namespace+"/"+r.Name] = r
		}
	}
	return t.byName[namespace+"/"+name]
}
