package checks

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/monitor"
	"github.com/vigil-operator/vigil/internal/store"
)

// A Project kept from the last read must show exactly what one made afresh
// shows, whatever changed in between: the checks, their specs, the store's
// rows, their order.
func TestProjectsShowWhatChanged(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, "sqlite:"+filepath.Join(t.TempDir(), "vigil.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	daily := "0 3 * * *"
	check := func(uid string, schedule *string) *v1.Check {
		return &v1.Check{
			ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: uid, UID: types.UID(uid), Generation: 1},
			Spec:       v1.CheckSpec{Schedule: schedule},
		}
	}
	ping := func(c *v1.Check, kind monitor.PingKind) {
		t.Helper()
		cfg, _ := Config(&c.Spec)
		tg := store.Target{UID: c.UID, Namespace: c.Namespace, Name: c.Name, Config: cfg}
		if _, err := st.RecordPing(ctx, tg, store.Ping{Kind: kind, At: now.Add(-time.Minute), Method: "GET"}); err != nil {
			t.Fatal(err)
		}
	}

	var specs specs
	var ps projects
	var last *Project
	read := func(step string, list ...*v1.Check) *Project {
		t.Helper()
		observed, err := st.ChecksIn(ctx, "team-a")
		if err != nil {
			t.Fatal(err)
		}
		p := ps.of("team-a", list, observed, &specs, now)
		for i, c := range list {
			want := viewOf(c, observed.Row(c.UID), specs.of(c), now)
			if got := p.View(i, now); got != want {
				t.Errorf("%s: %s shows %+v, made afresh %+v", step, c.Name, got, want)
			}
			if got, want := p.Observed(i), observed.Of(c.UID); got.NPings != want.NPings || got.Facts.State != want.Facts.State {
				t.Errorf("%s: %s observed %+v, made afresh %+v", step, c.Name, got, want)
			}
			cfg, _ := p.Config(i)
			if (cfg.Schedule != nil) != (c.Spec.Schedule != nil) {
				t.Errorf("%s: %s has the config of another spec: %+v", step, c.Name, cfg)
			}
		}
		last = p
		return p
	}

	a, b, c := check("a", nil), check("b", nil), check("c", &daily)
	ping(a, monitor.PingSuccess)
	list := []*v1.Check{a, b, c}
	first := read("first", list...)
	if again := read("nothing changed", list...); again != first {
		t.Error("read again with nothing changed, the project was made again")
	}

	ping(b, monitor.PingFail)
	if pinged := read("b pinged", list...); pinged == first || pinged.rows[0].spec != first.rows[0].spec {
		t.Error("after a ping, the project was kept, or a's spec parsed again")
	}

	edited := b.DeepCopy()
	edited.Generation, edited.Spec.Schedule = 2, &daily
	read("b scheduled", a, edited, c)

	// c now holds b's place: nothing of b's may show as c's.
	read("b deleted", a, c)
	ping(c, monitor.PingSuccess)
	read("c pinged", a, c)

	ac := []*v1.Check{a, c}
	before := read("before forget", ac...)
	ps.forget("team-a")
	if _, kept := ps.last["team-a"]; kept {
		t.Fatal("forget kept the project")
	}
	if again := read("forgotten", ac...); again == before || len(ps.last) != 1 {
		t.Error("a project read after it was forgotten was not made afresh")
	}

	// One not read for projectIdle is forgotten at the next read of any.
	observed, err := st.ChecksIn(ctx, "team-a")
	if err != nil {
		t.Fatal(err)
	}
	ps.of("team-b", nil, store.Observed{}, &specs, now.Add(projectIdle-time.Minute))
	if _, kept := ps.last["team-a"]; !kept {
		t.Fatal("a project read within projectIdle was forgotten")
	}
	ps.of("team-b", nil, store.Observed{}, &specs, now.Add(projectIdle))
	if _, kept := ps.last["team-a"]; kept {
		t.Fatal("a project not read for projectIdle is still kept")
	}
	if p := ps.of("team-a", ac, observed, &specs, now.Add(projectIdle)); p == last {
		t.Error("a forgotten project was handed out again")
	}
}
