// Package storetest is the contract of the ping store: what every backend
// must do, as tests. A backend's test calls Run with a function that makes
// a fresh, empty database.
package storetest

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/maintenance"
	"github.com/vigil-operator/vigil/internal/monitor"
	"github.com/vigil-operator/vigil/internal/store"
)

// NewDSN returns the DSN of a fresh, empty database of the backend under
// test; the backend removes it when the test ends.
type NewDSN func(t *testing.T) string

// t0 is the instant the tests start at.
var t0 = time.Date(2026, 11, 24, 3, 0, 0, 0, time.UTC)

// simple is a check expecting a ping every minute, with a minute's grace.
func simple(uid string, channels ...string) store.Target {
	return store.Target{
		UID: types.UID(uid), Namespace: "team-a", Name: "check-" + uid,
		Config:   monitor.Config{Timeout: time.Minute, Grace: time.Minute},
		Channels: channels,
	}
}

func ping(kind monitor.PingKind, at time.Time) store.Ping {
	return store.Ping{Kind: kind, At: at, Scheme: "http", Method: "GET", RemoteAddr: "10.0.0.1", UA: "curl"}
}

// Run runs the contract against stores in the databases newDSN makes.
func Run(t *testing.T, newDSN NewDSN) {
	ctx := context.Background()
	open := func(t *testing.T, dsn string, opts store.Options) *store.Store {
		t.Helper()
		s, err := store.Open(ctx, dsn, opts)
		must(t, err)
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	tests := map[string]func(t *testing.T, s *store.Store){
		"serial numbers, kinds and the ping log, newest first": func(t *testing.T, s *store.Store) {
			tg := simple("a")
			for i, k := range []monitor.PingKind{monitor.PingStart, monitor.PingSuccess, monitor.PingLog, monitor.PingIgnored} {
				rec, err := s.RecordPing(ctx, tg, ping(k, t0.Add(time.Duration(i)*time.Second)))
				must(t, err)
				if rec.N != int64(i+1) || rec.Kind != k {
					t.Fatalf("ping %d recorded as n=%d kind=%s", i+1, rec.N, rec.Kind)
				}
			}
			pings, err := s.Pings(ctx, tg.UID, 10)
			must(t, err)
			if got := kindsOf(pings); fmt.Sprint(got) != "[ign log success start]" {
				t.Fatalf("log = %v", got)
			}
			if pings[3].At != t0 || pings[3].Method != "GET" || pings[3].RemoteAddr != "10.0.0.1" || pings[3].UA != "curl" {
				t.Errorf("oldest ping = %+v", pings[3])
			}
			c, found, err := s.Check(ctx, tg.UID)
			must(t, err)
			if !found || c.NPings != 4 || c.Facts.State != monitor.StatusUp || !c.Facts.LastPing.Equal(t0.Add(time.Second)) {
				t.Errorf("check = %+v", c)
			}
			if c.Facts.LastDuration != time.Second {
				t.Errorf("a success after a start lasted %v, want 1s", c.Facts.LastDuration)
			}
		},
		"an early ping is kept for the UUID's holder, and recorded once, dated when it came, in the transaction that deletes it": func(t *testing.T, s *store.Store) {
			const uuid, other = "5d5f3e70-1111-4222-8333-00000000000e", "5d5f3e70-1111-4222-8333-00000000000f"
			tg := simple("e1")
			if _, _, ok, err := s.Holder(ctx, uuid); err != nil || ok {
				t.Fatalf("a UUID nobody claimed has a holder (%v)", err)
			}
			_, err := s.ClaimUUID(ctx, uuid, tg.Namespace, tg.UID, t0, true)
			must(t, err)
			uid, ns, ok, err := s.Holder(ctx, uuid)
			if err != nil || !ok || uid != tg.UID || ns != tg.Namespace {
				t.Fatalf("holder = %q in %q, %v (%v)", uid, ns, ok, err)
			}
			exit := 3
			for i, k := range []monitor.PingKind{monitor.PingStart, monitor.PingFail} {
				p := ping(k, t0.Add(time.Duration(i)*time.Second))
				p.Body, p.RID = []byte(fmt.Sprint("body ", i)), "5d5f3e70-0000-4000-8000-000000000001"
				if k == monitor.PingFail {
					p.ExitStatus = &exit
				}
				must(t, s.RecordEarly(ctx, store.EarlyPing{Check: uid, Namespace: ns, Ping: p}))
			}
			must(t, s.RecordEarly(ctx, store.EarlyPing{Check: "gone", Namespace: ns, Ping: ping(monitor.PingSuccess, t0.Add(2*time.Second))}))
			kept, err := s.EarlyPings(ctx, store.EarlyQuery{Limit: 10})
			must(t, err)
			if len(kept) != 3 || kept[0].Ping.Kind != monitor.PingStart || kept[1].Ping.Kind != monitor.PingFail || kept[2].Check != "gone" {
				t.Fatalf("kept = %+v", kept)
			}
			if e := kept[1]; !e.Ping.At.Equal(t0.Add(time.Second)) || string(e.Ping.Body) != "body 1" || e.Ping.ExitStatus == nil ||
				*e.Ping.ExitStatus != 3 || e.Ping.RID != "5d5f3e70-0000-4000-8000-000000000001" || e.Ping.UA != "curl" ||
				e.Ping.Method != "GET" || e.Ping.RemoteAddr != "10.0.0.1" || e.Check != tg.UID || e.Namespace != "team-a" {
				t.Errorf("kept fail ping = %+v", e)
			}
			if first, err := s.EarlyPings(ctx, store.EarlyQuery{Limit: 1}); err != nil || len(first) != 1 || first[0].ID != kept[0].ID {
				t.Errorf("the oldest one alone = %+v, %v", first, err)
			}
			for _, e := range kept[:2] {
				p := e.Ping
				p.Early, p.Noted = e.ID, t0.Add(time.Minute)
				_, err := s.RecordPing(ctx, tg, p)
				must(t, err)
			}
			must(t, s.DropEarly(ctx, kept[2]))
			if left, err := s.EarlyPings(ctx, store.EarlyQuery{Limit: 10}); err != nil || len(left) != 0 {
				t.Fatalf("after recording and dropping them, %d early pings are left (%v)", len(left), err)
			}
			pings, err := s.Pings(ctx, tg.UID, 10)
			must(t, err)
			if got := kindsOf(pings); fmt.Sprint(got) != "[fail start]" || !pings[0].At.Equal(t0.Add(time.Second)) {
				t.Fatalf("log = %v, the newest at %v", got, pings[0].At)
			}
			c, _, err := s.Check(ctx, tg.UID)
			must(t, err)
			if c.NPings != 2 || c.Facts.State != monitor.StatusDown || !c.Facts.LastPing.Equal(t0.Add(time.Second)) {
				t.Errorf("check after its early pings = %+v", c)
			}
			if _, _, ok, err := s.Holder(ctx, other); err != nil || ok {
				t.Errorf("another UUID has a holder (%v)", err)
			}
			must(t, s.Forget(ctx, tg.UID))
			if _, _, ok, err := s.Holder(ctx, uuid); err != nil || ok {
				t.Errorf("a UUID whose check was forgotten still has a holder (%v)", err)
			}
		},
		"an early ping is recorded once, its check waits for it, and one older than a recorded ping is logged only": func(t *testing.T, s *store.Store) {
			earlyOrderTest(ctx, t, s)
		},
		"one namespace's early pings past its budget are refused, and another namespace's are kept as ever": func(t *testing.T, s *store.Store) {
			body := bytes.Repeat([]byte("x"), 64<<10) // well within the writer's queue budget
			early := func(ns string) store.EarlyPing {
				p := ping(monitor.PingSuccess, t0)
				p.Body = body
				return store.EarlyPing{Check: types.UID("uid-" + ns), Namespace: ns, Ping: p}
			}
			for range store.MaxEarlyBodyBytesPerNamespace / len(body) {
				must(t, s.RecordEarly(ctx, early("hostile")))
			}
			if err := s.RecordEarly(ctx, early("hostile")); !errors.Is(err, store.ErrOverloaded) {
				t.Fatalf("an early ping past its namespace's budget: %v, want ErrOverloaded", err)
			}
			must(t, s.RecordEarly(ctx, early("victim")))
			kept, err := s.EarlyPings(ctx, store.EarlyQuery{Limit: 1000})
			must(t, err)
			if len(kept) != store.MaxEarlyBodyBytesPerNamespace/len(body)+1 {
				t.Fatalf("%d early pings kept", len(kept))
			}
			// Dropped, they give their room back.
			must(t, s.DropEarly(ctx, kept...))
			must(t, s.RecordEarly(ctx, early("hostile")))
		},
		"a project's checks read after writes show them, and an answer handed out stays as it was": func(t *testing.T, s *store.Store) {
			a, b := simple("m1"), simple("m2")
			other := simple("m3")
			other.Namespace = "team-b"
			_, err := s.RecordPing(ctx, a, ping(monitor.PingSuccess, t0))
			must(t, err)
			first, err := s.ChecksIn(ctx, "team-a")
			must(t, err)
			if first.Len() != 1 || first.Of(a.UID).NPings != 1 {
				t.Fatalf("team-a after one ping: %+v", first.Of(a.UID))
			}
			if again, err := s.ChecksIn(ctx, "team-a"); err != nil || !again.Same(first) {
				t.Errorf("read again with nothing written, the answer is not the same one (%v)", err)
			}
			for _, tg := range []store.Target{a, b, other} {
				_, err = s.RecordPing(ctx, tg, ping(monitor.PingFail, t0.Add(time.Second)))
				must(t, err)
			}
			second, err := s.ChecksIn(ctx, "team-a")
			must(t, err)
			if second.Same(first) {
				t.Errorf("read after writes, the answer is the one from before them")
			}
			if second.Len() != 2 || second.Of(a.UID).NPings != 2 || second.Of(b.UID).Facts.State != monitor.StatusDown {
				t.Errorf("team-a after more pings: %+v, %+v", second.Of(a.UID), second.Of(b.UID))
			}
			if first.Len() != 1 || first.Of(a.UID).NPings != 1 || first.Row(b.UID) != nil {
				t.Errorf("the first answer changed: %+v", first.Of(a.UID))
			}
			if third, err := s.ChecksIn(ctx, "team-b"); err != nil || third.Len() != 1 || third.Of(other.UID).NPings != 1 {
				t.Errorf("team-b: %+v, %v", third.Of(other.UID), err)
			}
			if none, err := s.ChecksIn(ctx, "team-c"); err != nil || none.Len() != 0 || none.Row(a.UID) != nil {
				t.Errorf("a namespace without checks: %d rows, %v", none.Len(), err)
			}
		},
		"a fail ping is a down flip with its deliveries, in the same write": func(t *testing.T, s *store.Store) {
			tg := simple("b", "ops", "pager")
			_, err := s.RecordPing(ctx, tg, ping(monitor.PingSuccess, t0))
			must(t, err)
			rec, err := s.RecordPing(ctx, tg, ping(monitor.PingFail, t0.Add(time.Second)))
			must(t, err)
			if rec.Flip == nil || rec.Flip.Up || rec.Flip.Reason != monitor.ReasonFail || !rec.Flip.At.Equal(t0.Add(time.Second)) {
				t.Fatalf("flip = %+v", rec.Flip)
			}
			due, err := s.DueDeliveries(ctx, t0.Add(time.Hour), store.DueQuery{Limit: 10})
			must(t, err)
			if len(due) != 2 || due[0].Flip.N != 1 || due[0].Namespace != "team-a" || due[0].Name != "check-b" {
				t.Fatalf("due deliveries = %+v", due)
			}
			rec, err = s.RecordPing(ctx, tg, ping(monitor.PingSuccess, t0.Add(2*time.Second)))
			must(t, err)
			if rec.Flip == nil || !rec.Flip.Up || rec.Flip.N != 2 {
				t.Fatalf("flip = %+v", rec.Flip)
			}
			flips, err := s.Flips(ctx, tg.UID)
			must(t, err)
			if len(flips) != 2 || !flips[0].Up || flips[1].Up {
				t.Fatalf("flips = %+v", flips)
			}
			c, _, err := s.Check(ctx, tg.UID)
			must(t, err)
			if c.LastFlip == nil || c.LastFlip.N != 2 {
				t.Errorf("last flip = %+v", c.LastFlip)
			}
		},
		"time: grace at the due time, down at the deadline, however late it is noticed": func(t *testing.T, s *store.Store) {
			tg := simple("c", "ops")
			_, err := s.RecordPing(ctx, tg, ping(monitor.PingSuccess, t0))
			must(t, err)
			due, err := s.Due(ctx, t0.Add(59*time.Second), 10)
			must(t, err)
			if len(due) != 0 {
				t.Fatalf("due before the due time: %+v", due)
			}
			due, err = s.Due(ctx, t0.Add(time.Minute), 10)
			must(t, err)
			if len(due) != 1 || due[0].UID != tg.UID {
				t.Fatalf("due at the due time: %+v", due)
			}
			flips, err := s.Observe(ctx, []store.Target{tg}, t0.Add(time.Minute))
			must(t, err)
			c, _, err := s.Check(ctx, tg.UID)
			must(t, err)
			if len(flips) != 0 || c.Facts.State != monitor.StatusGrace || !c.NextChange.Equal(t0.Add(2*time.Minute)) {
				t.Fatalf("after the due time: flips %v, check %+v", flips, c)
			}
			flips, err = s.Observe(ctx, []store.Target{tg}, t0.Add(10*time.Minute))
			must(t, err)
			f := flips[tg.UID]
			if f == nil || f.Up || f.Reason != monitor.ReasonTimeout || !f.At.Equal(t0.Add(2*time.Minute)) {
				t.Fatalf("down flip = %+v, want at the deadline", f)
			}
			c, _, err = s.Check(ctx, tg.UID)
			must(t, err)
			if c.Facts.State != monitor.StatusDown || !c.NextChange.IsZero() {
				t.Fatalf("down check = %+v", c)
			}
			if due, _ := s.Due(ctx, t0.Add(time.Hour), 10); len(due) != 0 {
				t.Errorf("a down check is still due: %+v", due)
			}
		},
		"a ping after a missed deadline records the down, then the up": func(t *testing.T, s *store.Store) {
			tg := simple("d", "ops")
			_, err := s.RecordPing(ctx, tg, ping(monitor.PingSuccess, t0))
			must(t, err)
			rec, err := s.RecordPing(ctx, tg, ping(monitor.PingSuccess, t0.Add(5*time.Minute)))
			must(t, err)
			flips, err := s.Flips(ctx, tg.UID)
			must(t, err)
			if len(flips) != 2 || flips[1].Up || !flips[1].At.Equal(t0.Add(2*time.Minute)) || !flips[0].Up || rec.Flip == nil || !rec.Flip.Up {
				t.Fatalf("flips = %+v, recorded %+v", flips, rec.Flip)
			}
		},
		"pause and resume record no flip": func(t *testing.T, s *store.Store) {
			tg := simple("e", "ops")
			_, err := s.RecordPing(ctx, tg, ping(monitor.PingSuccess, t0))
			must(t, err)
			if _, err := s.Resume(ctx, tg, t0.Add(time.Second)); !errors.Is(err, monitor.ErrNotPaused) {
				t.Fatalf("resuming an unpaused check: %v", err)
			}
			c, err := s.Pause(ctx, tg, t0.Add(time.Second))
			must(t, err)
			if c.Facts.State != monitor.StatusPaused || !c.NextChange.IsZero() {
				t.Fatalf("paused check = %+v", c)
			}
			c, err = s.Resume(ctx, tg, t0.Add(time.Hour))
			must(t, err)
			if c.Facts.State != monitor.StatusNew {
				t.Fatalf("resumed check = %+v", c)
			}
			if flips, _ := s.Flips(ctx, tg.UID); len(flips) != 0 {
				t.Errorf("flips = %+v", flips)
			}
		},
		"the ping log keeps its limit and the body budget, oldest first": func(t *testing.T, s *store.Store) {
			tg := simple("f")
			tg.PingLogLimit = 20
			for i := range 40 {
				p := ping(monitor.PingSuccess, t0.Add(time.Duration(i)*time.Second))
				p.Body = []byte(fmt.Sprintf("%08d", i))
				_, err := s.RecordPing(ctx, tg, p)
				must(t, err)
			}
			pings, err := s.Pings(ctx, tg.UID, 1000)
			must(t, err)
			if len(pings) < 20 || len(pings) >= 20+16 || pings[0].N != 40 {
				t.Fatalf("log holds %d pings, newest %d; want the newest 20 (give or take a pruning step)", len(pings), pings[0].N)
			}
			body, found, err := s.PingBody(ctx, tg.UID, 40)
			must(t, err)
			if !found || string(body) != "00000039" {
				t.Fatalf("body of ping 40 = %q, %v", body, found)
			}
			if _, found, _ := s.PingBody(ctx, tg.UID, 1); found {
				t.Error("ping 1 is still in the log")
			}
			previews, err := s.BodyPreviews(ctx, tg.UID, 3, 5)
			must(t, err)
			want := map[int64]string{40: "00000", 39: "00000", 38: "00000"}
			if len(previews) != len(want) {
				t.Fatalf("previews of the newest 3 = %v", previews)
			}
			for n, w := range want {
				if string(previews[n]) != w {
					t.Errorf("preview of ping %d = %q, want %q", n, previews[n], w)
				}
			}
			// A ping without a body has no preview.
			_, err = s.RecordPing(ctx, tg, ping(monitor.PingSuccess, t0.Add(time.Minute)))
			must(t, err)
			previews, err = s.BodyPreviews(ctx, tg.UID, 2, 100)
			must(t, err)
			if _, ok := previews[41]; ok || string(previews[40]) != "00000039" || len(previews) != 1 {
				t.Errorf("previews of the newest 2, the newest without a body = %v", previews)
			}
		},
		"bodies beyond the budget are dropped, oldest first": func(t *testing.T, s *store.Store) {
			tg := simple("g")
			for i := range 5 {
				p := ping(monitor.PingSuccess, t0.Add(time.Duration(i)*time.Second))
				p.Body = make([]byte, 400) // the budget is 1000 bytes
				_, err := s.RecordPing(ctx, tg, p)
				must(t, err)
			}
			pings, err := s.Pings(ctx, tg.UID, 10)
			must(t, err)
			var kept, dropped int
			for _, p := range pings {
				if p.BodySize > 0 {
					kept++
				}
				if p.BodyDropped {
					dropped++
				}
			}
			if kept != 2 || dropped != 3 || pings[0].BodySize != 400 || !pings[4].BodyDropped {
				t.Fatalf("kept %d bodies, dropped %d: %+v", kept, dropped, pings)
			}
		},
		"concurrent pings to many checks: every one counted once, serials gap-free": func(t *testing.T, s *store.Store) {
			const checks, each = 50, 20
			var wg sync.WaitGroup
			for c := range checks {
				for i := range each {
					wg.Go(func() {
						_, err := s.RecordPing(ctx, simple(fmt.Sprint("h", c)), ping(monitor.PingSuccess, t0.Add(time.Duration(i)*time.Millisecond)))
						if err != nil {
							t.Error(err)
						}
					})
				}
			}
			wg.Wait()
			for c := range checks {
				uid := types.UID(fmt.Sprint("h", c))
				pings, err := s.Pings(ctx, uid, 1000)
				must(t, err)
				var ns []int64
				for _, p := range pings {
					ns = append(ns, p.N)
				}
				sort.Slice(ns, func(i, j int) bool { return ns[i] < ns[j] })
				for i, n := range ns {
					if n != int64(i+1) {
						t.Fatalf("check %s: serials %v", uid, ns)
					}
				}
				chk, _, err := s.Check(ctx, uid)
				must(t, err)
				if chk.NPings != each || len(ns) != each {
					t.Fatalf("check %s: n_pings %d, %d logged, want %d", uid, chk.NPings, len(ns), each)
				}
			}
		},
		"the changes feed lists checks in the order of their writes": func(t *testing.T, s *store.Store) {
			_, err := s.RecordPing(ctx, simple("i1"), ping(monitor.PingSuccess, t0))
			must(t, err)
			_, err = s.RecordPing(ctx, simple("i2"), ping(monitor.PingFail, t0))
			must(t, err)
			all, err := s.Changes(ctx, store.Cursor{}, 100)
			must(t, err)
			if len(all) != 2 || all[0].UID != "i1" || all[1].UID != "i2" || all[1].State != monitor.StatusDown || all[0].Version >= all[1].Version {
				t.Fatalf("changes = %+v", all)
			}
			_, err = s.RecordPing(ctx, simple("i1"), ping(monitor.PingSuccess, t0.Add(time.Second)))
			must(t, err)
			later, err := s.Changes(ctx, all[1].Cursor(), 100)
			must(t, err)
			if len(later) != 1 || later[0].UID != "i1" {
				t.Fatalf("changes after %d = %+v", all[1].Version, later)
			}
		},
		"the changes feed pages through one write of many checks": func(t *testing.T, s *store.Store) {
			// One transaction gives every check it writes the same version:
			// a page that ends inside that group must not lose the rest.
			var targets []store.Target
			for i := range 7 {
				targets = append(targets, simple(fmt.Sprint("p", i)))
			}
			_, err := s.Observe(ctx, targets, t0)
			must(t, err)
			seen := map[types.UID]bool{}
			var at store.Cursor
			for range 10 {
				page, err := s.Changes(ctx, at, 3)
				must(t, err)
				if len(page) == 0 {
					break
				}
				for _, ch := range page {
					if seen[ch.UID] {
						t.Fatalf("%s listed twice", ch.UID)
					}
					seen[ch.UID] = true
				}
				at = page[len(page)-1].Cursor()
			}
			if len(seen) != len(targets) {
				t.Fatalf("the feed listed %d checks in pages of 3, want %d", len(seen), len(targets))
			}
		},
		"due deliveries leave out the busy channels": func(t *testing.T, s *store.Store) {
			_, err := s.RecordPing(ctx, simple("b1", "flood", "calm"), ping(monitor.PingFail, t0))
			must(t, err)
			_, err = s.RecordPing(ctx, simple("b2", "flood"), ping(monitor.PingFail, t0))
			must(t, err)
			channels := func(due []store.Delivery) []string {
				var out []string
				for _, d := range due {
					out = append(out, d.Channel)
				}
				sort.Strings(out)
				return out
			}
			due, err := s.DueDeliveries(ctx, t0.Add(time.Hour), store.DueQuery{Limit: 10})
			must(t, err)
			if got := channels(due); !slices.Equal(got, []string{"calm", "flood", "flood"}) {
				t.Fatalf("due to = %v", got)
			}
			due, err = s.DueDeliveries(ctx, t0.Add(time.Hour), store.DueQuery{Limit: 10,
				BusyChannels: []store.ChannelRef{{Namespace: "team-a", Name: "flood"}, {Namespace: "team-b", Name: "calm"}}})
			must(t, err)
			if got := channels(due); !slices.Equal(got, []string{"calm"}) {
				t.Fatalf("due to = %v with flood busy (and another namespace's calm), want only calm", got)
			}
			many := store.DueQuery{Limit: 10}
			for i := range 9 {
				many.BusyChannels = append(many.BusyChannels, store.ChannelRef{Namespace: "team-a", Name: fmt.Sprint("other-", i)})
			}
			due, err = s.DueDeliveries(ctx, t0.Add(time.Hour), many)
			must(t, err)
			if got := channels(due); !slices.Equal(got, []string{"calm", "flood", "flood"}) {
				t.Fatalf("due to = %v with nine other channels busy, want all", got)
			}
			many.BusyChannels = append(many.BusyChannels, store.ChannelRef{Namespace: "team-a", Name: "calm"})
			due, err = s.DueDeliveries(ctx, t0.Add(time.Hour), many)
			must(t, err)
			if got := channels(due); !slices.Equal(got, []string{"flood", "flood"}) {
				t.Fatalf("due to = %v with calm and nine others busy, want flood's", got)
			}
		},
		"namespaces take turns in due deliveries: one namespace's backlog does not fill the answer": func(t *testing.T, s *store.Store) {
			in := func(ns, uid string, at time.Time) {
				tg := simple(uid, "hook")
				tg.Namespace = ns
				_, err := s.RecordPing(ctx, tg, ping(monitor.PingFail, at))
				must(t, err)
			}
			// team-a owes twenty notifications, all older than the one
			// of team-b and the one of team-c.
			for i := range 20 {
				in("team-a", fmt.Sprint("flood-", i), t0.Add(time.Duration(i)*time.Second))
			}
			in("team-b", "calm", t0.Add(time.Minute))
			in("team-c", "quiet", t0.Add(2*time.Minute))
			names := func(q store.DueQuery) []string {
				t.Helper()
				due, err := s.DueDeliveries(ctx, t0.Add(time.Hour), q)
				must(t, err)
				var out []string
				for _, d := range due {
					out = append(out, d.Namespace+"/"+d.Name)
				}
				return out
			}
			if got, want := names(store.DueQuery{Limit: 3}), []string{"team-a/check-flood-0", "team-b/check-calm", "team-c/check-quiet"}; !slices.Equal(got, want) {
				t.Errorf("three due = %v, want each namespace's earliest: %v", got, want)
			}
			if got, want := names(store.DueQuery{Limit: 10, PerNamespace: 2}),
				[]string{"team-a/check-flood-0", "team-b/check-calm", "team-c/check-quiet", "team-a/check-flood-1"}; !slices.Equal(got, want) {
				t.Errorf("due with two per namespace = %v, want %v", got, want)
			}
			if got, want := names(store.DueQuery{Limit: 10, BusyNamespaces: []string{"team-a", "team-c"}}), []string{"team-b/check-calm"}; !slices.Equal(got, want) {
				t.Errorf("due with team-a and team-c busy = %v, want %v", got, want)
			}
			if got := names(store.DueQuery{Limit: 30}); len(got) != 22 || got[21] != "team-a/check-flood-19" {
				t.Errorf("all due = %v, want 22 ending with team-a's latest", got)
			}
			// When the answer cannot hold every namespace's, namespaces take
			// turns in name order after the one served last, however old
			// the others' backlogs.
			for after, want := range map[string]string{"": "team-a/check-flood-0", "team-a": "team-b/check-calm",
				"team-b": "team-c/check-quiet", "team-c": "team-a/check-flood-0", "team-bb": "team-c/check-quiet"} {
				if got := names(store.DueQuery{Limit: 1, After: after}); !slices.Equal(got, []string{want}) {
					t.Errorf("one due after %q = %v, want %s", after, got, want)
				}
			}
		},
		"namespaces take turns in byte order, hyphens and prefixes included": func(t *testing.T, s *store.Store) {
			// In byte order, as Go compares strings (the dispatcher's
			// turns); a collation that skips hyphens at first (glibc's
			// en_US.UTF-8, ICU with alternate=shifted) would put teama
			// before team-b, and team before tea-m.
			namespaces := []string{"tea-m", "team", "team-b", "team-d", "teama", "teamc"}
			for i, ns := range namespaces {
				tg := simple(fmt.Sprint("turn-", i), "hook")
				tg.Namespace = ns
				_, err := s.RecordPing(ctx, tg, ping(monitor.PingFail, t0.Add(time.Duration(i)*time.Second)))
				must(t, err)
			}
			checkTurns(t, s, t0.Add(time.Hour), namespaces)
		},
		"a channel hears a check's flips in order, and outcomes are kept": func(t *testing.T, s *store.Store) {
			tg := simple("j", "ops")
			_, err := s.RecordPing(ctx, tg, ping(monitor.PingFail, t0))
			must(t, err)
			_, err = s.RecordPing(ctx, tg, ping(monitor.PingSuccess, t0.Add(time.Second)))
			must(t, err)
			due, err := s.DueDeliveries(ctx, t0.Add(time.Hour), store.DueQuery{Limit: 10})
			must(t, err)
			if len(due) != 1 || due[0].Flip.N != 1 || due[0].Flip.Up {
				t.Fatalf("due = %+v, want only the down", due)
			}
			retry := t0.Add(2 * time.Hour)
			must(t, s.RecordOutcomes(ctx, []store.Outcome{{CheckUID: tg.UID, FlipN: 1, Channel: "ops", State: store.DeliveryPending,
				NextAttempt: retry, LastError: "503", Attempted: true}}))
			if due, _ := s.DueDeliveries(ctx, t0.Add(time.Hour), store.DueQuery{Limit: 10}); len(due) != 0 {
				t.Fatalf("due while the down waits for its retry: %+v", due)
			}
			next, err := s.NextDelivery(ctx)
			must(t, err)
			if !next.Equal(retry) {
				t.Errorf("next delivery at %v, want %v", next, retry)
			}
			must(t, s.RecordOutcomes(ctx, []store.Outcome{{CheckUID: tg.UID, FlipN: 1, Channel: "ops", State: store.DeliveryDelivered, Attempted: true}}))
			due, err = s.DueDeliveries(ctx, t0.Add(time.Hour), store.DueQuery{Limit: 10})
			must(t, err)
			if len(due) != 1 || !due[0].Flip.Up {
				t.Fatalf("due after the down was delivered = %+v", due)
			}
			dl, err := s.Deliveries(ctx, tg.UID, 1)
			must(t, err)
			if dl["ops"].State != store.DeliveryDelivered || dl["ops"].Attempts != 2 {
				t.Errorf("delivery of the down = %+v", dl["ops"])
			}
		},
		"forget removes everything of a check": func(t *testing.T, s *store.Store) {
			tg := simple("k", "ops")
			_, err := s.RecordPing(ctx, tg, ping(monitor.PingFail, t0))
			must(t, err)
			must(t, s.Forget(ctx, tg.UID))
			if _, found, _ := s.Check(ctx, tg.UID); found {
				t.Error("the check is still there")
			}
			if pings, _ := s.Pings(ctx, tg.UID, 10); len(pings) != 0 {
				t.Error("its pings are still there")
			}
			if due, _ := s.DueDeliveries(ctx, t0.Add(time.Hour), store.DueQuery{Limit: 10}); len(due) != 0 {
				t.Error("its deliveries are still there")
			}
		},
		"a UUID belongs to the first project to claim it, across a re-create, until its hold passes": func(t *testing.T, s *store.Store) {
			const id = "5d5f3e70-1111-4222-8333-444455556666"
			now := time.Now()
			claim := func(ns, uid string, at time.Time, create bool) string {
				t.Helper()
				owner, err := s.ClaimUUID(ctx, id, ns, types.UID(uid), at, create)
				must(t, err)
				return owner
			}
			owner := func(at time.Time) string {
				t.Helper()
				ns, err := s.UUIDOwner(ctx, id, at)
				must(t, err)
				return ns
			}
			if got := claim("victim", "v1", now, false); got != "" {
				t.Fatalf("a claim that may not create took the UUID for %q", got)
			}
			if got := owner(now); got != "" {
				t.Fatalf("unclaimed UUID owned by %q", got)
			}
			if got := claim("victim", "v1", now, true); got != "victim" {
				t.Fatalf("first claim: owner %q, want victim", got)
			}
			if got := claim("attacker", "a1", now, true); got != "victim" {
				t.Fatalf("another project's claim: owner %q, want victim", got)
			}
			// The victim's check is deleted (its rows forgotten) and
			// re-created: the UUID stays the victim's meanwhile.
			victim := simple("uuid-v1")
			victim.UID = "v1"
			_, err := s.Observe(ctx, []store.Target{victim}, now)
			must(t, err)
			must(t, s.Forget(ctx, "v1"))
			if got := claim("attacker", "a1", time.Now(), true); got != "victim" {
				t.Fatalf("claim while the victim re-creates: owner %q, want victim", got)
			}
			if got := owner(time.Now()); got != "victim" {
				t.Fatalf("owner while the victim re-creates: %q", got)
			}
			if got := claim("victim", "v2", time.Now(), true); got != "victim" {
				t.Fatalf("the re-created check's claim: owner %q, want victim", got)
			}
			// Released again, it is another project's to take once the
			// hold has passed, not before.
			must(t, s.Forget(ctx, "v2"))
			if got := claim("attacker", "a1", time.Now().Add(store.UUIDHold-time.Minute), true); got != "victim" {
				t.Fatalf("claim before the hold passed: owner %q, want victim", got)
			}
			later := time.Now().Add(store.UUIDHold + time.Minute)
			if got := claim("other", "o1", later, true); got != "other" {
				t.Fatalf("claim after the hold: owner %q, want other", got)
			}
		},
		"check creations in a project take turns, each told the last one's version": func(t *testing.T, s *store.Store) {
			first, err := s.LockProject(ctx, "turns")
			must(t, err)
			if first.LastCreate != "" {
				t.Errorf("LastCreate = %q before any creation", first.LastCreate)
			}
			// Another project is not held up.
			other, err := s.LockProject(ctx, "turns-elsewhere")
			must(t, err)
			must(t, other.Release(""))
			// The same project waits for the holder.
			short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
			defer cancel()
			if l, err := s.LockProject(short, "turns"); err == nil {
				_ = l.Release("")
				t.Fatal("took a project's lock while another held it")
			}
			got := make(chan *store.ProjectLock)
			go func() {
				l, err := s.LockProject(ctx, "turns")
				if err != nil {
					t.Error(err)
				}
				got <- l
			}()
			select {
			case <-got:
				t.Fatal("took the lock before its holder released it")
			case <-time.After(200 * time.Millisecond):
			}
			must(t, first.Release("4711"))
			second := <-got
			if second == nil {
				t.FailNow()
			}
			if second.LastCreate != "4711" {
				t.Errorf("LastCreate = %q, want the first holder's 4711", second.LastCreate)
			}
			must(t, second.Release(""))
			third, err := s.LockProject(ctx, "turns")
			must(t, err)
			if third.LastCreate != "4711" {
				t.Errorf("LastCreate after a holder created nothing = %q, want 4711", third.LastCreate)
			}
			must(t, third.Release(""))

			// A lock outlives the context it was taken with (a client that
			// went away mid-create): it ends at Release only.
			gone, cancelGone := context.WithCancel(ctx)
			held, err := s.LockProject(gone, "turns")
			must(t, err)
			cancelGone()
			short2, cancel2 := context.WithTimeout(ctx, 300*time.Millisecond)
			defer cancel2()
			if l, err := s.LockProject(short2, "turns"); err == nil {
				_ = l.Release("")
				t.Fatal("took a project's lock after its holder's context ended, before Release")
			}
			// Many waiters do not take the connections pings need.
			waiters, cancelWaiters := context.WithCancel(ctx)
			var wg sync.WaitGroup
			for range 20 {
				wg.Go(func() {
					if l, err := s.LockProject(waiters, "turns"); err == nil {
						_ = l.Release("")
					}
				})
			}
			time.Sleep(100 * time.Millisecond) // let them queue
			pinged, cancelPing := context.WithTimeout(ctx, 5*time.Second)
			_, err = s.RecordPing(pinged, simple("while-waiting"), ping(monitor.PingSuccess, t0))
			cancelPing()
			must(t, err)
			cancelWaiters()
			must(t, held.Release(""))
			wg.Wait()
		},
		"any bytes in a ping's facts are stored, and fail no other write": func(t *testing.T, s *store.Store) {
			bad, good := simple("bytes-bad"), simple("bytes-good")
			p := ping(monitor.PingSuccess, t0)
			p.UA, p.Method = "agent \xff\x00 end", "G\xffT"
			errs := make(chan error, 2)
			go func() { _, err := s.RecordPing(ctx, bad, p); errs <- err }()
			go func() { _, err := s.RecordPing(ctx, good, ping(monitor.PingSuccess, t0)); errs <- err }()
			must(t, <-errs)
			must(t, <-errs)
			for _, tg := range []store.Target{bad, good} {
				pings, err := s.Pings(ctx, tg.UID, 10)
				must(t, err)
				if len(pings) != 1 {
					t.Fatalf("%s: %d pings stored, want 1", tg.Name, len(pings))
				}
			}
			pings, _ := s.Pings(ctx, bad.UID, 10)
			if !strings.HasPrefix(pings[0].UA, "agent ") || !strings.HasSuffix(pings[0].UA, " end") {
				t.Errorf("user agent stored as %q", pings[0].UA)
			}
		},
		"a project key belongs to the first project to hold it, across a re-create of its Secret, until its hold passes": func(t *testing.T, s *store.Store) {
			now := time.Now()
			sync := func(ns string, at time.Time, ids ...string) map[string]string {
				t.Helper()
				owners, err := s.SyncKeys(ctx, ns, ids, at)
				must(t, err)
				return owners
			}
			if got := sync("victim", now, "ping:a", "api:b"); got["ping:a"] != "victim" || got["api:b"] != "victim" {
				t.Fatalf("first holder: %v", got)
			}
			if got := sync("copier", now, "ping:a", "api:c"); got["ping:a"] != "victim" || got["api:c"] != "copier" {
				t.Fatalf("a copy: %v", got)
			}
			// The victim's Secret is deleted, then re-created.
			sync("victim", now)
			if got := sync("copier", now.Add(time.Hour), "ping:a"); got["ping:a"] != "victim" {
				t.Fatalf("a copy while the victim re-creates: %v", got)
			}
			if got := sync("victim", now.Add(time.Hour), "ping:a", "api:b"); got["ping:a"] != "victim" {
				t.Fatalf("the re-created Secret: %v", got)
			}
			// Held no more for longer than the hold, it is the next
			// holder's.
			sync("victim", now.Add(2*time.Hour))
			if got := sync("copier", now.Add(2*time.Hour+store.UUIDHold-time.Minute), "ping:a"); got["ping:a"] != "victim" {
				t.Fatalf("before the hold passed: %v", got)
			}
			if got := sync("copier", now.Add(2*time.Hour+store.UUIDHold+time.Minute), "ping:a"); got["ping:a"] != "copier" {
				t.Fatalf("after the hold: %v", got)
			}
		},
		"the namespaces holding keys are those with a key not released": func(t *testing.T, s *store.Store) {
			now := time.Now()
			holders := func() []string {
				t.Helper()
				ns, err := s.KeyHolders(ctx)
				must(t, err)
				return ns
			}
			if got := holders(); len(got) != 0 {
				t.Fatalf("an empty store's holders: %q", got)
			}
			for _, sync := range []struct {
				ns  string
				ids []string
			}{{"b", []string{"api:b1", "api:b2"}}, {"a", []string{"ping:a"}}, {"copier", []string{"ping:a"}}, {"c", []string{"api:c"}},
				{"c", nil}} { // c's Secret went: its key's hold runs
				_, err := s.SyncKeys(ctx, sync.ns, sync.ids, now)
				must(t, err)
			}
			// Once each, sorted; not c, whose hold runs, nor the copier,
			// which holds nothing.
			if got, want := holders(), []string{"a", "b"}; !slices.Equal(got, want) {
				t.Fatalf("holders %q, want %q", got, want)
			}
		},
		"a namespace's many keys are recorded in chunks, pings commit between them, and edits write what changed": func(t *testing.T, s *store.Store) {
			// More keys than SQLite (32,766) or PostgreSQL (65,535) bind in
			// one statement.
			const n = 70_000
			ids := make([]string, n)
			for i := range ids {
				ids[i] = fmt.Sprintf("api:%064d", i)
			}
			now := time.Now()
			synced := make(chan error, 1)
			var owners map[string]string
			go func() {
				var err error
				owners, err = s.SyncKeys(ctx, "many", ids, now)
				synced <- err
			}()
			// Each chunk commits on its own: part of the keys is there
			// while the rest is still being recorded, and a ping commits
			// meanwhile.
			partial := false
			for done := false; !done; {
				select {
				case err := <-synced:
					must(t, err)
					done = true
				default:
					keys, _, err := s.OwnerRows(ctx)
					must(t, err)
					if partial = keys > 0 && keys < n; partial {
						_, err := s.RecordPing(ctx, simple("between-chunks"), ping(monitor.PingSuccess, t0))
						must(t, err)
						must(t, <-synced)
						done = true
					}
				}
			}
			if !partial {
				t.Error("no chunk of the sync was seen committed before the whole sync")
			}
			if len(owners) != n || owners[ids[0]] != "many" || owners[ids[n-1]] != "many" {
				t.Fatalf("%d owners, first %q, last %q", len(owners), owners[ids[0]], owners[ids[n-1]])
			}
			// An edit: the first half goes, new keys come. The keys that
			// went start their hold; another project does not get them.
			edited := append(slices.Clone(ids[n/2:]), "api:new-1", "api:new-2")
			owners, err := s.SyncKeys(ctx, "many", edited, now.Add(time.Minute))
			must(t, err)
			if len(owners) != len(edited) || owners["api:new-1"] != "many" || owners[ids[n-1]] != "many" {
				t.Fatalf("after the edit: %d owners, new %q, kept %q", len(owners), owners["api:new-1"], owners[ids[n-1]])
			}
			got, err := s.SyncKeys(ctx, "other", []string{ids[0], ids[n-1]}, now.Add(2*time.Minute))
			must(t, err)
			if got[ids[0]] != "many" || got[ids[n-1]] != "many" {
				t.Fatalf("another project's claims during the hold: %v", got)
			}
			got, err = s.SyncKeys(ctx, "other", []string{ids[0], ids[n-1]}, now.Add(time.Minute+store.UUIDHold+time.Second))
			must(t, err)
			if got[ids[0]] != "other" || got[ids[n-1]] != "many" {
				t.Fatalf("another project's claims after the released key's hold: %v", got)
			}
		},
		"holds that have passed are pruned, and a namespace keeps a bounded number of released holds": func(t *testing.T, s *store.Store) {
			now := time.Now()
			keys := func(prefix string, n int) []string {
				out := make([]string, n)
				for i := range out {
					out[i] = fmt.Sprintf("api:%s-%05d", prefix, i)
				}
				return out
			}
			sync := func(ns string, at time.Time, ids ...string) map[string]string {
				t.Helper()
				owners, err := s.SyncKeys(ctx, ns, ids, at)
				must(t, err)
				return owners
			}
			rows := func() (int64, int64) {
				t.Helper()
				k, u, err := s.OwnerRows(ctx)
				must(t, err)
				return k, u
			}
			// A project rotates 1,200 keys: they are released; another
			// holds 10; a check's UUID is released when its check goes.
			rotated, held := keys("rotated", 1200), keys("held", 10)
			sync("rotates", now, rotated...)
			sync("rotates", now)
			sync("holds", now, held...)
			const uuid = "5d5f3e70-1111-4222-8333-000000000001"
			_, err := s.ClaimUUID(ctx, uuid, "holds", "c1", now, true)
			must(t, err)
			must(t, s.Forget(ctx, "c1"))
			if k, u := rows(); k != 1210 || u != 1 {
				t.Fatalf("before pruning: %d key rows, %d UUID rows", k, u)
			}
			pruned, err := s.PruneOwners(ctx, time.Now().Add(store.UUIDHold-time.Minute))
			must(t, err)
			if k, u := rows(); pruned != 0 || k != 1210 || u != 1 {
				t.Fatalf("pruned %d rows before the holds passed: %d key rows, %d UUID rows left", pruned, k, u)
			}
			later := time.Now().Add(store.UUIDHold + time.Minute)
			pruned, err = s.PruneOwners(ctx, later)
			must(t, err)
			if k, u := rows(); pruned != 1201 || k != 10 || u != 0 {
				t.Fatalf("pruned %d rows after the holds passed (want 1201): %d key rows, %d UUID rows left", pruned, k, u)
			}
			// Pruned, a key is anyone's; held ones stay their holder's.
			if got := sync("newcomer", later, rotated[0], held[0]); got[rotated[0]] != "newcomer" || got[held[0]] != "holds" {
				t.Fatalf("claims after pruning: %v", got)
			}

			// A namespace that releases more than MaxReleasedOwners keys
			// within the hold keeps the holds of the newest.
			older, newer := keys("older", 300), keys("newer", store.MaxReleasedOwners)
			sync("churns", now, older...)
			sync("churns", now.Add(time.Second), newer...) // releases older
			sync("churns", now.Add(2*time.Second))         // releases newer
			pruned, err = s.PruneOwners(ctx, now.Add(3*time.Second))
			must(t, err)
			if pruned != len(older) {
				t.Fatalf("pruned %d of a crowded namespace's released rows, want %d", pruned, len(older))
			}
			if got := sync("newcomer", now.Add(4*time.Second), older[0], newer[0]); got[older[0]] != "newcomer" || got[newer[0]] != "churns" {
				t.Fatalf("claims after trimming the crowded namespace: %v", got)
			}
		},
		"old flips go, unless they owe notifications": func(t *testing.T, s *store.Store) {
			quiet, loud := simple("l1"), simple("l2", "ops")
			for _, tg := range []store.Target{quiet, loud} {
				_, err := s.RecordPing(ctx, tg, ping(monitor.PingFail, t0))
				must(t, err)
			}
			must(t, s.Prune(ctx, t0.Add(time.Hour)))
			if f, _ := s.Flips(ctx, quiet.UID); len(f) != 0 {
				t.Errorf("an old flip stayed: %+v", f)
			}
			if f, _ := s.Flips(ctx, loud.UID); len(f) != 1 {
				t.Errorf("a flip that owes a notification went: %+v", f)
			}
		},
		"a run's pings are found by its run id": func(t *testing.T, s *store.Store) {
			tg := simple("m")
			p := ping(monitor.PingStart, t0)
			p.RID = "job-1"
			_, err := s.RecordPing(ctx, tg, p)
			must(t, err)
			p.Kind, p.At = monitor.PingSuccess, t0.Add(time.Second)
			_, err = s.RecordPing(ctx, tg, p)
			must(t, err)
			kinds, horizon, err := s.RunKinds(ctx, tg.UID, "job-1")
			must(t, err)
			if !kinds[monitor.PingStart] || !kinds[monitor.PingSuccess] || len(kinds) != 2 || !horizon.IsZero() {
				t.Fatalf("kinds %v horizon %v", kinds, horizon)
			}
		},
		"a body larger than the queue's byte bound is refused at once": func(t *testing.T, s *store.Store) {
			p := ping(monitor.PingSuccess, t0)
			p.Body = make([]byte, 2<<20) // the bound is 1 MiB
			if _, err := s.RecordPing(ctx, simple("n"), p); !errors.Is(err, store.ErrOverloaded) {
				t.Fatalf("err = %v, want ErrOverloaded", err)
			}
			if _, err := s.RecordPing(ctx, simple("n"), ping(monitor.PingSuccess, t0)); err != nil {
				t.Fatalf("a small ping after it: %v", err)
			}
		},
	}
	maps.Copy(tests, runTests(ctx))
	maps.Copy(tests, reportTests(ctx))
	maps.Copy(tests, cronJobTests(ctx))
	maps.Copy(tests, sessionTests(ctx))
	for _, name := range slices.Sorted(maps.Keys(tests)) {
		t.Run(name, func(t *testing.T) {
			s := open(t, newDSN(t), store.Options{BodyBudget: 1000, MaxQueuedBytes: 1 << 20, RunLimit: 32})
			tests[name](t, s)
		})
	}

	// Tests that fill the database themselves, through a plain connection
	// (store.MigrateTo), before and while the store has it open: a
	// database left by an older version, with data, migrated by Open; a
	// backlog too large to build ping by ping.
	withDSN := map[string]func(t *testing.T, dsn string){
		"a namespace past its ping body limit keeps a body only for an older one of the same check": func(t *testing.T, dsn string) {
			bodyLimitTest(ctx, t, dsn)
		},
		"a run far outside the check's usual duration is a failed run": func(t *testing.T, dsn string) {
			anomalyTest(ctx, t, dsn)
		},
		"an acknowledged down stops its re-alerts and escalation until it ends": func(t *testing.T, dsn string) {
			ackTest(ctx, t, dsn)
		},
		"replicas sharing a store read their own early pings or the others', and know whether another has read every Check": func(t *testing.T, dsn string) {
			earlyReplicasTest(ctx, t, dsn)
		},
		"a deadline that fell while no manager ran gets a fresh grace from the return": func(t *testing.T, dsn string) {
			absenceTest(ctx, t, dsn)
		},
		"a check's notifications wait while a check it depends on is down": func(t *testing.T, dsn string) {
			dependencyTest(ctx, t, dsn)
		},
		"storm control reads a Channel's recent and pending notifications from the outbox": func(t *testing.T, dsn string) {
			stormTest(ctx, t, dsn)
		},
		"the alert policy's counts and reasons survive a restart": func(t *testing.T, dsn string) {
			tg := simple("policy", "ops")
			tg.Config.FailureThreshold = 3
			long := simple("long", "ops")
			long.Config.MaxRuntime = 5 * time.Minute
			s := open(t, dsn, store.Options{})
			// Two fails and a missed run: three failures, counted across
			// two restarts, and only the third is a flip.
			for i := range 2 {
				rec, err := s.RecordPing(ctx, tg, ping(monitor.PingFail, t0.Add(time.Duration(i)*time.Minute)))
				must(t, err)
				if rec.Flip != nil {
					t.Fatalf("fail %d of 3 flipped: %+v", i+1, rec.Flip)
				}
			}
			_, err := s.RecordPing(ctx, long, ping(monitor.PingStart, t0))
			must(t, err)
			must(t, s.Close())
			s = open(t, dsn, store.Options{})
			c, _, err := s.Check(ctx, tg.UID)
			must(t, err)
			if c.Facts.Failures != 2 {
				t.Fatalf("after a restart the count is %d, want 2", c.Facts.Failures)
			}
			// The next run was due a minute after the second fail; its
			// deadline is a minute later.
			deadline := t0.Add(3 * time.Minute)
			flips, err := s.Observe(ctx, []store.Target{tg, long}, deadline.Add(-time.Microsecond))
			must(t, err)
			if len(flips) != 0 {
				t.Fatalf("flips before the deadline: %+v", flips)
			}
			must(t, s.Close())
			s = open(t, dsn, store.Options{})
			flips, err = s.Observe(ctx, []store.Target{tg, long}, t0.Add(time.Hour))
			must(t, err)
			f := flips[tg.UID]
			if f == nil || f.Reason != monitor.ReasonTimeout || !f.At.Equal(deadline) {
				t.Fatalf("third failure: flip %+v, want a timeout at %s", f, deadline)
			}
			dl, err := s.Deliveries(ctx, tg.UID, f.N)
			must(t, err)
			if len(dl) != 1 {
				t.Fatalf("%d deliveries, want 1 (ops)", len(dl))
			}
			// The overrun's reason and its words are the flip's, as read back.
			g := flips[long.UID]
			if g == nil || g.Reason != monitor.ReasonRuntime || !g.At.Equal(t0.Add(5*time.Minute)) {
				t.Fatalf("overrun: flip %+v, want runtime at %s", g, t0.Add(5*time.Minute))
			}
			must(t, s.Close())
			s = open(t, dsn, store.Options{})
			read, err := s.Flips(ctx, long.UID)
			must(t, err)
			if len(read) != 1 || read[0].Detail != "ran longer than 5 minutes" {
				t.Fatalf("flips read back %+v, want one with the detail \"ran longer than 5 minutes\"", read)
			}
		},
		"re-alerts and escalations are queued at their instants, survive a restart, and stop at the up": func(t *testing.T, dsn string) {
			tg := simple("realert", "ops", "quiet")
			tg.Config.Timeout, tg.Config.Grace = 24*time.Hour, time.Hour
			tg.Realert = 10 * time.Minute
			tg.Escalation = store.Escalation{After: 30 * time.Minute, Channels: []string{"lead"}}
			tg.Routes = store.RouteFunc(func(_, ch string) store.Route {
				if ch == "quiet" { // takes downs and ups only
					return store.Route{Events: store.EventDown | store.EventUp}
				}
				return store.Route{}
			})
			s := open(t, dsn, store.Options{})
			rec, err := s.RecordPing(ctx, tg, ping(monitor.PingFail, t0))
			must(t, err)
			if rec.Flip == nil {
				t.Fatal("no down flip")
			}
			if got := drain(t, s); !slices.Equal(got, []string{"down to ops", "down to quiet"}) {
				t.Fatalf("at the down: %v", got)
			}
			observe := func(at time.Time) {
				t.Helper()
				_, err := s.Observe(ctx, []store.Target{tg}, at)
				must(t, err)
			}
			next := func() time.Time {
				t.Helper()
				c, _, err := s.Check(ctx, tg.UID)
				must(t, err)
				return c.NextChange
			}
			if got := next(); !got.Equal(t0.Add(10 * time.Minute)) {
				t.Fatalf("next change %s, want the first re-alert at %s", got, t0.Add(10*time.Minute))
			}
			observe(t0.Add(10*time.Minute - time.Microsecond))
			if got := drain(t, s); len(got) != 0 {
				t.Fatalf("before the first re-alert: %v", got)
			}
			observe(t0.Add(10 * time.Minute))
			if got := drain(t, s); !slices.Equal(got, []string{"realert to ops"}) {
				t.Fatalf("at 10 min: %v", got)
			}
			// Down for a while with nobody looking, then a restart: one
			// re-alert catches up, and the escalation comes.
			must(t, s.Close())
			s = open(t, dsn, store.Options{})
			observe(t0.Add(35 * time.Minute))
			if got := drain(t, s); !slices.Equal(got, []string{"escalation to lead", "realert to ops"}) {
				t.Fatalf("at 35 min: %v", got)
			}
			if got := next(); !got.Equal(t0.Add(40 * time.Minute)) {
				t.Fatalf("next change %s, want the next re-alert at %s", got, t0.Add(40*time.Minute))
			}
			// The up goes to every Channel told of the down, and says since when.
			rec, err = s.RecordPing(ctx, tg, ping(monitor.PingSuccess, t0.Add(38*time.Minute)))
			must(t, err)
			if rec.Flip == nil || !rec.Flip.Up || !rec.Flip.Since.Equal(t0) {
				t.Fatalf("up flip %+v, want one since %s", rec.Flip, t0)
			}
			if got := drain(t, s); !slices.Equal(got, []string{"up to lead", "up to ops", "up to quiet"}) {
				t.Fatalf("at the up: %v", got)
			}
			observe(t0.Add(3 * time.Hour))
			if got := drain(t, s); len(got) != 0 {
				t.Fatalf("after the up: %v", got)
			}
			// A down that ends before the escalation delay is not escalated.
			_, err = s.RecordPing(ctx, tg, ping(monitor.PingFail, t0.Add(4*time.Hour)))
			must(t, err)
			_, err = s.RecordPing(ctx, tg, ping(monitor.PingSuccess, t0.Add(4*time.Hour+5*time.Minute)))
			must(t, err)
			observe(t0.Add(5 * time.Hour))
			if got := drain(t, s); !slices.Equal(got, []string{"down to ops", "up to ops", "down to quiet", "up to quiet"}) {
				t.Fatalf("a short down: %v", got)
			}
			flips, err := s.Flips(ctx, tg.UID)
			must(t, err)
			if len(flips) != 4 {
				t.Fatalf("%d flips listed, want the 4 real ones (notices are not flips): %+v", len(flips), flips)
			}
			recent, err := s.RecentFlips(ctx, tg.UID, 3)
			must(t, err)
			if !slices.EqualFunc(recent, flips[:3], func(a, b store.Flip) bool { return a.N == b.N }) {
				t.Fatalf("the 3 newest flips: %+v, want %+v", recent, flips[:3])
			}
		},
		"an SLA's breach and its end are each told once, across a restart, and not inside a maintenance window": func(t *testing.T, dsn string) {
			tg := simple("sla", "ops", "pager")
			tg.Config.Timeout = 24 * time.Hour
			tg.Routes = store.RouteFunc(func(_, ch string) store.Route {
				if ch == "pager" {
					return store.Route{Events: store.EventDown | store.EventUp}
				}
				return store.Route{}
			})
			tg.Maintenance = windows(t, "upgrade", 2*time.Hour, 3*time.Hour)
			s := open(t, dsn, store.Options{})
			_, err := s.RecordPing(ctx, tg, ping(monitor.PingSuccess, t0))
			must(t, err)
			judge := func(breach string, at time.Duration, wantNews bool) {
				t.Helper()
				news, err := s.JudgeSLA(ctx, tg, store.SLAVerdict{Breach: breach, Detail: "figures at " + at.String()}, t0.Add(at))
				must(t, err)
				if news != wantNews {
					t.Fatalf("%q at %s: news %v, want %v", breach, at, news, wantNews)
				}
			}
			breaches := func(want string) {
				t.Helper()
				got, err := s.SLABreaches(ctx)
				must(t, err)
				if v, ok := got[tg.UID]; v.Breach != want || ok != (want != "") || len(got) > 1 {
					t.Fatalf("breaches %+v, want %q", got, want)
				}
			}
			judge("", time.Minute, false) // met, never breached: nothing to tell
			judge("SuccessRateLow", 10*time.Minute, true)
			judge("SuccessRateLow", 20*time.Minute, false)
			judge("DurationRegressed", 30*time.Minute, true) // another rule breached
			breaches("DurationRegressed")
			judge("", 150*time.Minute, false) // inside the window: neither told nor recorded
			breaches("DurationRegressed")
			must(t, s.Close())
			s = open(t, dsn, store.Options{})
			judge("", 200*time.Minute, true)
			breaches("")
			if got := drain(t, s); !slices.Equal(got, []string{"sla-breach to ops", "sla-breach to ops", "sla-met to ops"}) {
				t.Fatalf("told %v", got)
			}
			flips, err := s.Flips(ctx, tg.UID)
			must(t, err)
			if len(flips) != 0 {
				t.Fatalf("flips %+v: an SLA's notices are not changes of state", flips)
			}
			list, err := s.Notifications(ctx, tg.UID, 10)
			must(t, err)
			if len(list) != 3 || list[0].Notice != monitor.NoticeSLAMet || list[0].Detail != "figures at 3h20m0s" ||
				list[2].Reason != "SuccessRateLow" {
				t.Fatalf("notifications %+v", list)
			}
			// An SLA removed is forgotten without a word; so is a deleted check.
			judge("SuccessRateLow", 4*time.Hour, true)
			must(t, s.ForgetSLA(ctx, tg.UID))
			breaches("")
			judge("", 5*time.Hour, false)
			judge("SuccessRateLow", 6*time.Hour, true)
			must(t, s.Forget(ctx, tg.UID))
			breaches("")
		},
		"a maintenance window holds the down and tells it once at its end, across a restart": func(t *testing.T, dsn string) {
			tg := simple("maint", "ops")
			tg.Config.Timeout, tg.Config.Grace = 24*time.Hour, time.Hour
			tg.Realert = 20 * time.Minute
			tg.Maintenance = windows(t, "upgrade", time.Hour, 3*time.Hour, "nightly", 5*time.Hour, 6*time.Hour)
			s := open(t, dsn, store.Options{})
			_, err := s.RecordPing(ctx, tg, ping(monitor.PingSuccess, t0))
			must(t, err)
			check := func(want, until string, next time.Duration) {
				t.Helper()
				c, _, err := s.Check(ctx, tg.UID)
				must(t, err)
				if c.Maintenance != want || fmtUntil(c.MaintenanceUntil) != until || !c.NextChange.Equal(t0.Add(next)) {
					t.Fatalf("maintenance %q until %q, next change %s; want %q until %q, next change %s",
						c.Maintenance, fmtUntil(c.MaintenanceUntil), c.NextChange, want, until, t0.Add(next))
				}
			}
			check("", "", time.Hour) // the window's start is a change
			_, err = s.Observe(ctx, []store.Target{tg}, t0.Add(time.Hour))
			must(t, err)
			check("upgrade", fmtUntil(t0.Add(3*time.Hour)), 3*time.Hour)
			rec, err := s.RecordPing(ctx, tg, ping(monitor.PingFail, t0.Add(90*time.Minute)))
			must(t, err)
			if rec.Flip == nil || rec.Flip.Held != "upgrade" {
				t.Fatalf("flip %+v, want a down held by upgrade", rec.Flip)
			}
			_, err = s.Observe(ctx, []store.Target{tg}, t0.Add(2*time.Hour))
			must(t, err)
			if got := drain(t, s); len(got) != 0 {
				t.Fatalf("inside the window: %v", got)
			}
			check("upgrade", fmtUntil(t0.Add(3*time.Hour)), 3*time.Hour)
			// A restart inside the window loses nothing.
			must(t, s.Close())
			s = open(t, dsn, store.Options{})
			_, err = s.Observe(ctx, []store.Target{tg}, t0.Add(3*time.Hour))
			must(t, err)
			if got := drain(t, s); !slices.Equal(got, []string{"down to ops"}) {
				t.Fatalf("at the window's end: %v", got)
			}
			// Re-alerts run from the end, and the next window is a change.
			check("", "", 3*time.Hour+20*time.Minute)
			_, err = s.Observe(ctx, []store.Target{tg}, t0.Add(3*time.Hour+20*time.Minute))
			must(t, err)
			if got := drain(t, s); !slices.Equal(got, []string{"realert to ops"}) {
				t.Fatalf("after the window: %v", got)
			}
			// Up and down again inside the next window: the Channels
			// believed it down and it is: nothing to tell at the end, and
			// no re-alert is sent inside.
			_, err = s.RecordPing(ctx, tg, ping(monitor.PingSuccess, t0.Add(5*time.Hour+10*time.Minute)))
			must(t, err)
			_, err = s.RecordPing(ctx, tg, ping(monitor.PingFail, t0.Add(5*time.Hour+20*time.Minute)))
			must(t, err)
			_, err = s.Observe(ctx, []store.Target{tg}, t0.Add(5*time.Hour+59*time.Minute))
			must(t, err)
			if got := drain(t, s); len(got) != 0 {
				t.Fatalf("inside the second window: %v", got)
			}
			_, err = s.Observe(ctx, []store.Target{tg}, t0.Add(6*time.Hour))
			must(t, err)
			if got := drain(t, s); !slices.Equal(got, []string{"realert to ops"}) {
				t.Fatalf("at the second window's end: %v, want only the re-alert that came due inside", got)
			}
			flips, err := s.Flips(ctx, tg.UID)
			must(t, err)
			var held []string
			for _, f := range flips {
				held = append(held, f.Held)
			}
			if !slices.Equal(held, []string{"nightly", "nightly", "upgrade"}) {
				t.Fatalf("flips held by %q, want the three flips inside windows named", held)
			}
		},
		"a flapping check is told once that it flaps, and its state once it is steady, across a restart": func(t *testing.T, dsn string) {
			tg := simple("flap", "ops")
			tg.Config.Timeout, tg.Config.Grace = 24*time.Hour, time.Hour
			tg.Realert = 20 * time.Minute
			opts := store.Options{Flapping: store.FlapPolicy{Limit: 4, Window: time.Hour, Steady: 10 * time.Minute}}
			s := open(t, dsn, opts)
			flip := func(minute int) {
				t.Helper()
				kind := monitor.PingSuccess
				if minute%2 == 1 {
					kind = monitor.PingFail
				}
				rec, err := s.RecordPing(ctx, tg, ping(kind, t0.Add(time.Duration(minute)*time.Minute)))
				must(t, err)
				if rec.Flip == nil {
					t.Fatalf("minute %d: no flip", minute)
				}
			}
			_, err := s.RecordPing(ctx, tg, ping(monitor.PingSuccess, t0))
			must(t, err)
			drain(t, s) // new to up: nobody is told
			for m := 1; m <= 4; m++ {
				flip(m)
			}
			if got := drain(t, s); !slices.Equal(got, []string{"down to ops", "up to ops", "down to ops", "up to ops"}) {
				t.Fatalf("the first 4 flips of the hour: %v", got)
			}
			flip(5) // the 5th starts the flapping: held, and told once
			if got := drain(t, s); !slices.Equal(got, []string{"flapping to ops"}) {
				t.Fatalf("the 5th flip: %v", got)
			}
			for m := 6; m <= 9; m++ {
				flip(m)
			}
			// Held: no flip told, no re-alert; it ends down at minute 9.
			_, err = s.Observe(ctx, []store.Target{tg}, t0.Add(18*time.Minute))
			must(t, err)
			if got := drain(t, s); len(got) != 0 {
				t.Fatalf("while it flaps: %v", got)
			}
			c, _, err := s.Check(ctx, tg.UID)
			must(t, err)
			if !c.NextChange.Equal(t0.Add(19 * time.Minute)) {
				t.Fatalf("next change %s, want when it has been down for the steady 10 min", c.NextChange)
			}
			must(t, s.Close())
			s = open(t, dsn, opts)
			_, err = s.Observe(ctx, []store.Target{tg}, t0.Add(19*time.Minute))
			must(t, err)
			if got := drain(t, s); !slices.Equal(got, []string{"down to ops"}) {
				t.Fatalf("steady: %v, want the down the Channels were not told", got)
			}
			// Re-alerts run from then; a flip after it is told again.
			_, err = s.Observe(ctx, []store.Target{tg}, t0.Add(39*time.Minute))
			must(t, err)
			if got := drain(t, s); !slices.Equal(got, []string{"realert to ops"}) {
				t.Fatalf("20 min after: %v", got)
			}
			flip(40)
			if got := drain(t, s); !slices.Equal(got, []string{"up to ops"}) {
				t.Fatalf("after the flapping: %v", got)
			}
			flips, err := s.Flips(ctx, tg.UID)
			must(t, err)
			var held []string
			for _, f := range flips {
				if f.Notice == "" {
					held = append(held, f.Held)
				}
			}
			// Newest first: minute 40, 9 to 5 held, 4 to 1.
			f := store.HeldFlapping
			if want := []string{"", f, f, f, f, f, "", "", "", ""}; !slices.Equal(held, want) {
				t.Fatalf("flips held %q, want %q", held, want)
			}
		},
		"a check keeps at most its flip limit, and a flip whose notification is pending until it is sent": func(t *testing.T, dsn string) {
			tg := simple("many-flips", "ops")
			tg.Config.Timeout, tg.Config.Grace = 24*time.Hour, time.Hour
			s := open(t, dsn, store.Options{FlipLimit: 16, Flapping: store.FlapPolicy{Limit: -1}})
			flipAt := func(i int) {
				t.Helper()
				kind := monitor.PingSuccess
				if i%2 == 1 {
					kind = monitor.PingFail
				}
				rec, err := s.RecordPing(ctx, tg, ping(kind, t0.Add(time.Duration(i)*time.Second)))
				must(t, err)
				if i > 0 && rec.Flip == nil {
					t.Fatalf("ping %d flipped nothing", i)
				}
			}
			kept := func() []int64 {
				t.Helper()
				flips, err := s.Flips(ctx, tg.UID)
				must(t, err)
				var ns []int64
				for _, f := range flips {
					ns = append(ns, f.N)
				}
				return ns
			}
			flipAt(0)
			for i := 1; i <= 20; i++ { // nothing sent yet: all 20 pending
				flipAt(i)
			}
			if got := kept(); len(got) != 20 {
				t.Fatalf("with their notifications pending, %d of 20 flips kept: %v", len(got), got)
			}
			if got := drain(t, s); len(got) != 20 {
				t.Fatalf("%d notifications, want the 20 flips'", len(got))
			}
			for i := 21; i <= 40; i++ {
				flipAt(i)
				drain(t, s)
			}
			if got := kept(); !slices.Equal(got, descending(40, 25)) {
				t.Fatalf("flips kept %v, want the newest 16, 40 to 25", got)
			}
		},
		"a ping dated before it was noted is held or told as of when it was noted": func(t *testing.T, dsn string) {
			tg := simple("noted", "ops")
			tg.Config.Timeout, tg.Config.Grace = 24*time.Hour, time.Hour
			tg.Maintenance = windows(t, "early", time.Hour, 2*time.Hour, "late", 4*time.Hour, 5*time.Hour)
			s := open(t, dsn, store.Options{})
			_, err := s.RecordPing(ctx, tg, ping(monitor.PingSuccess, t0))
			must(t, err)
			// Failed just before "early" began, noted inside it: held.
			p := ping(monitor.PingFail, t0.Add(time.Hour-time.Second))
			p.Noted = t0.Add(time.Hour + time.Second)
			rec, err := s.RecordPing(ctx, tg, p)
			must(t, err)
			if rec.Flip == nil || rec.Flip.Held != "early" {
				t.Fatalf("flip %+v, want one held by early", rec.Flip)
			}
			_, err = s.Observe(ctx, []store.Target{tg}, t0.Add(2*time.Hour))
			must(t, err)
			if got := drain(t, s); !slices.Equal(got, []string{"down to ops"}) {
				t.Fatalf("at early's end: %v", got)
			}
			// Up inside "late", noted after it ended: told at once, and
			// "late" is not opened again.
			_, err = s.Observe(ctx, []store.Target{tg}, t0.Add(5*time.Hour))
			must(t, err)
			p = ping(monitor.PingSuccess, t0.Add(5*time.Hour-time.Second))
			p.Noted = t0.Add(5*time.Hour + time.Second)
			rec, err = s.RecordPing(ctx, tg, p)
			must(t, err)
			if rec.Flip == nil || rec.Flip.Held != "" {
				t.Fatalf("flip %+v, want an up nothing held", rec.Flip)
			}
			if got := drain(t, s); !slices.Equal(got, []string{"up to ops"}) {
				t.Fatalf("after late: %v", got)
			}
			c, _, err := s.Check(ctx, tg.UID)
			must(t, err)
			if c.Maintenance != "" {
				t.Fatalf("the row says %q holds it", c.Maintenance)
			}
		},
		"an up held by a window is told at its end to every Channel told of the down": func(t *testing.T, dsn string) {
			tg := simple("maint-up", "ops")
			tg.Config.Timeout, tg.Config.Grace = 24*time.Hour, time.Hour
			tg.Escalation = store.Escalation{After: 10 * time.Minute, Channels: []string{"lead"}}
			tg.Maintenance = windows(t, "snooze-maint-up", 30*time.Minute, time.Hour)
			s := open(t, dsn, store.Options{})
			_, err := s.RecordPing(ctx, tg, ping(monitor.PingFail, t0))
			must(t, err)
			_, err = s.Observe(ctx, []store.Target{tg}, t0.Add(10*time.Minute))
			must(t, err)
			if got := drain(t, s); !slices.Equal(got, []string{"escalation to lead", "down to ops"}) {
				t.Fatalf("before the window: %v", got)
			}
			_, err = s.RecordPing(ctx, tg, ping(monitor.PingSuccess, t0.Add(40*time.Minute)))
			must(t, err)
			if got := drain(t, s); len(got) != 0 {
				t.Fatalf("inside the window: %v", got)
			}
			_, err = s.Observe(ctx, []store.Target{tg}, t0.Add(time.Hour))
			must(t, err)
			if got := drain(t, s); !slices.Equal(got, []string{"up to lead", "up to ops"}) {
				t.Fatalf("at the window's end: %v", got)
			}
			// Told of a down, then an up held and a pause inside a window:
			// the up is still told at the end (an incident is resolved).
			_, err = s.RecordPing(ctx, tg, ping(monitor.PingFail, t0.Add(70*time.Minute)))
			must(t, err)
			if got := drain(t, s); !slices.Equal(got, []string{"down to ops"}) {
				t.Fatalf("the second down: %v", got)
			}
			tg.Maintenance = windows(t, "pause-inside", 90*time.Minute, 100*time.Minute)
			_, err = s.RecordPing(ctx, tg, ping(monitor.PingSuccess, t0.Add(91*time.Minute)))
			must(t, err)
			_, err = s.Pause(ctx, tg, t0.Add(92*time.Minute))
			must(t, err)
			_, err = s.Observe(ctx, []store.Target{tg}, t0.Add(100*time.Minute))
			must(t, err)
			if got := drain(t, s); !slices.Equal(got, []string{"up to ops"}) {
				t.Fatalf("an up held, then paused: %v", got)
			}
			_, err = s.Resume(ctx, tg, t0.Add(101*time.Minute))
			must(t, err)
			// A down and an up inside a window tell nobody anything.
			tg.Maintenance = windows(t, "later", 2*time.Hour, 3*time.Hour)
			_, err = s.RecordPing(ctx, tg, ping(monitor.PingFail, t0.Add(2*time.Hour+time.Minute)))
			must(t, err)
			_, err = s.RecordPing(ctx, tg, ping(monitor.PingSuccess, t0.Add(2*time.Hour+2*time.Minute)))
			must(t, err)
			_, err = s.Observe(ctx, []store.Target{tg}, t0.Add(4*time.Hour))
			must(t, err)
			if got := drain(t, s); len(got) != 0 {
				t.Fatalf("a down and up inside a window: %v", got)
			}
		},
		"a Channel that takes toolong, tooshort or maintenance hears only those": func(t *testing.T, dsn string) {
			tg := simple("routes", "ops", "long", "short", "maint")
			tg.Config.Timeout, tg.Config.Grace = 24*time.Hour, time.Hour
			tg.Config.MaxRuntime, tg.Config.MinRuntime = 10*time.Minute, time.Minute
			tg.Routes = store.RouteFunc(func(_, ch string) store.Route {
				switch ch {
				case "long":
					return store.Route{Events: store.EventTooLong}
				case "short":
					return store.Route{Events: store.EventTooShort | store.EventUp}
				case "maint":
					return store.Route{Events: store.EventMaintenance}
				}
				return store.Route{}
			})
			s := open(t, dsn, store.Options{})
			// A run over maxRuntime: down at start + 10 min.
			_, err := s.RecordPing(ctx, tg, ping(monitor.PingStart, t0))
			must(t, err)
			_, err = s.Observe(ctx, []store.Target{tg}, t0.Add(10*time.Minute))
			must(t, err)
			if got := drain(t, s); !slices.Equal(got, []string{"down to long", "down to ops"}) {
				t.Fatalf("an overrun: %v", got)
			}
			// Up again, then a run that ends too soon.
			_, err = s.RecordPing(ctx, tg, ping(monitor.PingSuccess, t0.Add(11*time.Minute)))
			must(t, err)
			_, err = s.RecordPing(ctx, tg, ping(monitor.PingStart, t0.Add(20*time.Minute)))
			must(t, err)
			_, err = s.RecordPing(ctx, tg, ping(monitor.PingSuccess, t0.Add(20*time.Minute+time.Second)))
			must(t, err)
			if got := drain(t, s); !slices.Equal(got, []string{"up to ops", "down to ops", "up to short", "down to short"}) {
				t.Fatalf("a short run: %v", got)
			}
			// A window starts and ends: only maint hears of it.
			tg.Maintenance = windows(t, "nightly", time.Hour, 2*time.Hour)
			_, err = s.Observe(ctx, []store.Target{tg}, t0.Add(time.Hour))
			must(t, err)
			_, err = s.Observe(ctx, []store.Target{tg}, t0.Add(2*time.Hour))
			must(t, err)
			if got := drain(t, s); !slices.Equal(got, []string{"maintenance-start to maint", "maintenance-end to maint"}) {
				t.Fatalf("a window: %v", got)
			}
			list, err := s.Notifications(ctx, tg.UID, 2)
			must(t, err)
			if len(list) != 2 || list[1].Held != "nightly" || !list[1].HeldUntil.Equal(t0.Add(2*time.Hour)) {
				t.Fatalf("the window's notices: %+v", list)
			}
		},
		"notifications list flips and notices newest first, each with its deliveries": func(t *testing.T, dsn string) {
			tg := simple("notes", "ops", "dev")
			tg.Config.Timeout, tg.Config.Grace = 24*time.Hour, time.Hour
			tg.Realert = 10 * time.Minute
			s := open(t, dsn, store.Options{})
			_, err := s.RecordPing(ctx, tg, ping(monitor.PingFail, t0))
			must(t, err)
			drain(t, s)
			_, err = s.Observe(ctx, []store.Target{tg}, t0.Add(10*time.Minute))
			must(t, err)
			tg.Maintenance = windows(t, "upgrade", 15*time.Minute, time.Hour)
			_, err = s.RecordPing(ctx, tg, ping(monitor.PingSuccess, t0.Add(20*time.Minute)))
			must(t, err)
			list, err := s.Notifications(ctx, tg.UID, 10)
			must(t, err)
			var got []string
			for _, n := range list {
				line := fmt.Sprintf("%d %s up=%v held=%q:", n.N, n.Notice, n.Up, n.Held)
				for _, d := range n.Deliveries {
					line += " " + d.Channel + "=" + string(d.State)
				}
				got = append(got, line)
			}
			want := []string{`3  up=true held="upgrade":`, `2 realert up=false held="": dev=pending ops=pending`,
				`1  up=false held="": dev=delivered ops=delivered`}
			if !slices.Equal(got, want) {
				t.Fatalf("notifications\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			if list, err = s.Notifications(ctx, tg.UID, 1); err != nil || len(list) != 1 || list[0].N != 3 {
				t.Fatalf("the newest one: %+v, %v", list, err)
			}
		},
		"a failed run below the threshold is told to the Channels that take failures": func(t *testing.T, dsn string) {
			tg := simple("failures", "ops", "chatty")
			tg.Config.FailureThreshold = 3
			tg.Routes = store.RouteFunc(func(_, ch string) store.Route {
				if ch == "chatty" {
					return store.Route{Events: store.DefaultEvents | store.EventFailure}
				}
				return store.Route{}
			})
			s := open(t, dsn, store.Options{})
			_, err := s.RecordPing(ctx, tg, ping(monitor.PingFail, t0))
			must(t, err)
			// A missed run, counted at its deadline (due at 1 min, grace 1 min).
			_, err = s.Observe(ctx, []store.Target{tg}, t0.Add(2*time.Minute))
			must(t, err)
			_, err = s.RecordPing(ctx, tg, ping(monitor.PingFail, t0.Add(3*time.Minute)))
			must(t, err)
			if got := drain(t, s); !slices.Equal(got, []string{"failure to chatty", "failure to chatty", "down to chatty", "down to ops"}) {
				t.Fatalf("%v", got)
			}
		},
		"a prune of more old flips than one chunk takes them all, with their deliveries, and keeps what is owed or recent; then the Channel numbers no delivery names go": func(t *testing.T, dsn string) {
			db, err := store.MigrateTo(ctx, dsn, 0)
			must(t, err)
			defer func() { _ = db.Close() }()
			const old = 1_200 // more than the writer prunes in one transaction
			oldAt, recent := t0.Add(-100*24*time.Hour).UnixMicro(), t0.UnixMicro()
			series := fmt.Sprintf(`WITH RECURSIVE i(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM i WHERE n < %d)`, old)
			hook, mail, gone := channelNumber("team-a", "hook"), channelNumber("team-a", "mail"), channelNumber("team-a", "gone")
			for _, stmt := range []string{
				`INSERT INTO channels (namespace, name) VALUES ('team-a', 'hook'), ('team-a', 'mail'), ('team-a', 'gone'), ('team-b', 'idle')`,
				`INSERT INTO flips (check_uid, n, created, up, from_state, to_state) ` + series +
					fmt.Sprintf(` SELECT 'old-' || (n %% 7), n, %d, FALSE, 'up', 'down' FROM i`, oldAt),
				`INSERT INTO deliveries (check_uid, flip_n, channel_id, state, next_attempt, namespace) ` + series +
					fmt.Sprintf(` SELECT 'old-' || (n %% 7), n, %s, 'delivered', %d, 'team-a' FROM i`, hook, oldAt),
				`INSERT INTO deliveries (check_uid, flip_n, channel_id, state, next_attempt, namespace) ` + series +
					fmt.Sprintf(` SELECT 'old-' || (n %% 7), n, %s, 'failed', %d, 'team-a' FROM i`, mail, oldAt),
				`INSERT INTO deliveries (check_uid, flip_n, channel_id, state, next_attempt, namespace) ` + series +
					fmt.Sprintf(` SELECT 'old-' || (n %% 7), n, %s, 'delivered', %d, 'team-a' FROM i`, gone, oldAt),
				// An old flip that still owes a notification, and a recent one.
				fmt.Sprintf(`INSERT INTO flips (check_uid, n, created, up, from_state, to_state) VALUES ('owed', 1, %d, FALSE, 'up', 'down'), ('new', 1, %d, FALSE, 'up', 'down')`, oldAt, recent),
				fmt.Sprintf(`INSERT INTO deliveries (check_uid, flip_n, channel_id, state, next_attempt, namespace) VALUES
					('owed', 1, %s, 'delivered', %d, 'team-a'), ('owed', 1, %s, 'pending', %d, 'team-a'), ('new', 1, %s, 'delivered', %d, 'team-a')`,
					hook, oldAt, mail, oldAt, hook, recent),
			} {
				if _, err := db.ExecContext(ctx, stmt); err != nil {
					t.Fatalf("%s: %v", stmt, err)
				}
			}
			s := open(t, dsn, store.Options{})
			must(t, s.Prune(ctx, t0.Add(-90*24*time.Hour)))
			count := func(query string) int {
				t.Helper()
				var n int
				must(t, db.QueryRowContext(ctx, query).Scan(&n))
				return n
			}
			if n := count(`SELECT COUNT(*) FROM flips WHERE check_uid LIKE 'old-%'`); n != 0 {
				t.Errorf("%d of %d old flips left", n, old)
			}
			if n := count(`SELECT COUNT(*) FROM deliveries WHERE check_uid LIKE 'old-%'`); n != 0 {
				t.Errorf("%d of %d deliveries of old flips left", n, 2*old)
			}
			if n := count(`SELECT COUNT(*) FROM flips WHERE check_uid IN ('owed', 'new')`); n != 2 {
				t.Errorf("%d of the owed and the recent flip left, want both", n)
			}
			if n := count(`SELECT COUNT(*) FROM deliveries WHERE check_uid IN ('owed', 'new')`); n != 3 {
				t.Errorf("%d of their 3 deliveries left, want all", n)
			}
			// "gone" was named by old deliveries only, "idle" by none.
			names := func() []string {
				t.Helper()
				rows, err := db.QueryContext(ctx, `SELECT namespace || '/' || name FROM channels ORDER BY namespace, name`)
				must(t, err)
				defer func() { _ = rows.Close() }()
				var out []string
				for rows.Next() {
					var n string
					must(t, rows.Scan(&n))
					out = append(out, n)
				}
				must(t, rows.Err())
				return out
			}
			if got, want := names(), []string{"team-a/hook", "team-a/mail"}; !slices.Equal(got, want) {
				t.Errorf("Channel numbers after the sweep: %v, want %v", got, want)
			}
			// A Channel that comes back gets a new number, and its
			// notifications are read by its name.
			tg := store.Target{UID: "back", Namespace: "team-a", Name: "back", Config: monitor.Config{Timeout: time.Hour},
				Channels: []string{"gone"}}
			_, err = s.RecordPing(ctx, tg, store.Ping{Kind: monitor.PingFail, At: t0})
			must(t, err)
			due, err := s.DueDeliveries(ctx, t0, store.DueQuery{Limit: 10})
			must(t, err)
			if len(due) != 1 || due[0].Channel != "gone" || due[0].CheckUID != "back" {
				t.Fatalf("due = %+v, want back's down to gone", due)
			}
			if got, want := names(), []string{"team-a/gone", "team-a/hook", "team-a/mail"}; !slices.Equal(got, want) {
				t.Errorf("Channel numbers after the new down: %v, want %v", got, want)
			}
		},
		"finding the namespaces that owe due deliveries does not read one namespace's whole backlog": func(t *testing.T, dsn string) {
			db, err := store.MigrateTo(ctx, dsn, 0)
			must(t, err)
			defer func() { _ = db.Close() }()
			// Four namespaces owe one notification each, and flood owes
			// the rest: 1,000, then a hundred times as many.
			backlog(t, db, 1, 1_000, 250)
			s := open(t, dsn, store.Options{})
			now := t0.Add(time.Hour)
			q := store.DueQuery{Limit: 16, PerNamespace: 4} // as the dispatcher asks with 4 workers free
			fastest := func() time.Duration {
				t.Helper()
				best := time.Duration(1<<63 - 1)
				for range 20 {
					start := time.Now()
					due, err := s.DueDeliveries(ctx, now, q)
					best = min(best, time.Since(start))
					must(t, err)
					if len(due) != 8 { // flood's 4 and one of each of the others
						t.Fatalf("%d due, want 8", len(due))
					}
				}
				return best
			}
			small := fastest()
			backlog(t, db, 1_001, 100_000, 0)
			large := fastest()
			// Reading every pending delivery, as GROUP BY namespace did,
			// made the query 8 (SQLite) to 14 (PostgreSQL) times as slow
			// on a 2-core machine; reading a few rows of each namespace,
			// 1 to 1.5 times. The bound leaves room for a busy machine,
			// and a floor for quick queries.
			t.Logf("the fastest of 20 queries: %v with a backlog of 1,000, %v with 100,000", small, large)
			if bound := 3*small + 2*time.Millisecond; large > bound {
				t.Errorf("with a hundred times the backlog the query took %v, against %v (bound %v)", large, small, bound)
			}
		},
		"deliveries pending from before migration 7 get their check's namespace, and namespaces take turns in byte order after migration 8": func(t *testing.T, dsn string) {
			db, err := store.MigrateTo(ctx, dsn, 6)
			must(t, err)
			// Literal values: the statements run as written on every
			// backend. Four namespaces whose byte order is not the order
			// of a collation that skips hyphens (team-b, team-d, teama,
			// teamc against teama, team-b, teamc, team-d).
			at := t0.UnixMicro()
			for i, ns := range []string{"team-b", "team-d", "teama", "teamc"} {
				for _, stmt := range []string{
					fmt.Sprintf(`INSERT INTO checks (uid, namespace, name, version) VALUES ('u%d', '%s', 'check-%d', 1)`, i, ns, i),
					fmt.Sprintf(`INSERT INTO flips (check_uid, n, created, up, from_state, to_state) VALUES ('u%d', 1, %d, FALSE, 'up', 'down')`, i, at),
					// team-b's is the earliest.
					fmt.Sprintf(`INSERT INTO deliveries (check_uid, flip_n, channel, state, next_attempt) VALUES ('u%d', 1, 'ops', 'pending', %d)`, i, at+int64(i)),
				} {
					if _, err := db.ExecContext(ctx, stmt); err != nil {
						t.Fatalf("%s: %v", stmt, err)
					}
				}
			}
			must(t, db.Close())

			s := open(t, dsn, store.Options{})
			now := t0.Add(time.Hour)
			due, err := s.DueDeliveries(ctx, now, store.DueQuery{Limit: 10, PerNamespace: 1, BusyNamespaces: []string{"team-b"}})
			must(t, err)
			var got []string
			for _, d := range due {
				got = append(got, d.Namespace+"/"+d.Name+"/"+d.Channel)
			}
			if want := []string{"team-d/check-1/ops", "teama/check-2/ops", "teamc/check-3/ops"}; !slices.Equal(got, want) {
				t.Errorf("due after the upgrade, team-b busy = %v, want %v", got, want)
			}
			checkTurns(t, s, now, []string{"team-b", "team-d", "teama", "teamc"})
		},
		"after migration 13, a run is its logged ping (with the duration migration 12's run had) or its kept row, once; and a check knows how far back its runs are whole": func(t *testing.T, dsn string) {
			db, err := store.MigrateTo(ctx, dsn, 12)
			must(t, err)
			at := func(s int) int64 { return t0.Add(time.Duration(s) * time.Second).UnixMicro() }
			// whole: pings 1..3, all logged (a start, a success, a fail).
			// trimmed: 10 pings, the log holds 8..10 (a success, a log, a
			// fail): runs before 8 are lost. quiet: never pinged.
			stmts := []string{
				`INSERT INTO checks (uid, namespace, name, version, n_pings, last_ping) VALUES ('whole', 'team-a', 'whole', 1, 3, ` + fmt.Sprint(at(3)) + `)`,
				`INSERT INTO checks (uid, namespace, name, version, n_pings, last_ping) VALUES ('trimmed', 'team-a', 'trimmed', 1, 10, ` + fmt.Sprint(at(10)) + `)`,
				`INSERT INTO checks (uid, namespace, name, version) VALUES ('quiet', 'team-a', 'quiet', 1)`,
			}
			for _, p := range []struct {
				uid  string
				n    int
				kind string
			}{{"whole", 1, "start"}, {"whole", 2, "success"}, {"whole", 3, "fail"},
				{"trimmed", 8, "success"}, {"trimmed", 9, "log"}, {"trimmed", 10, "fail"}} {
				stmts = append(stmts, fmt.Sprintf(`INSERT INTO pings (check_uid, n, kind, created) VALUES ('%s', %d, '%s', %d)`, p.uid, p.n, p.kind, at(p.n)))
			}
			// Migration 12 recorded whole's second ping as a run of 1 s too,
			// and kept trimmed's fifth after the log let it go.
			stmts = append(stmts,
				`INSERT INTO runs (check_uid, n, ended, failed, duration) VALUES ('whole', 2, `+fmt.Sprint(at(2))+`, FALSE, 1000000)`,
				`INSERT INTO runs (check_uid, n, ended, failed, duration) VALUES ('trimmed', 5, `+fmt.Sprint(at(5))+`, FALSE, NULL)`)
			for _, stmt := range stmts {
				if _, err := db.ExecContext(ctx, stmt); err != nil {
					t.Fatalf("%s: %v", stmt, err)
				}
			}
			must(t, db.Close())

			s := open(t, dsn, store.Options{})
			observed, err := s.ChecksIn(ctx, "team-a")
			must(t, err)
			histories, err := s.HistoriesIn(ctx, "team-a", t0)
			must(t, err)
			sec := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Second) }
			for _, tc := range []struct {
				uid     types.UID
				runs    []store.Run
				counts  store.RunCounts
				comment string
			}{
				{"whole", []store.Run{{N: 2, Ended: sec(2), Duration: time.Second, HasDuration: true}, {N: 3, Ended: sec(3), Failed: true}},
					store.RunCounts{LastSuccess: sec(2)}, "every ping logged: nothing let go"},
				{"trimmed", []store.Run{{N: 5, Ended: sec(5)}, {N: 8, Ended: sec(8)}, {N: 10, Ended: sec(10), Failed: true}},
					store.RunCounts{LastSuccess: sec(8), Dropped: sec(5).Add(-time.Microsecond)}, "whole only from its oldest run"},
				{"quiet", nil, store.RunCounts{}, "nothing to say"},
			} {
				if got := histories[tc.uid].Runs; !slices.Equal(got, tc.runs) {
					t.Errorf("%s (%s): runs %+v, want %+v", tc.uid, tc.comment, got, tc.runs)
				}
				if got := observed.Of(tc.uid).RunCounts; got != tc.counts {
					t.Errorf("%s (%s): counts %+v, want %+v", tc.uid, tc.comment, got, tc.counts)
				}
			}
		},
	}
	maps.Copy(withDSN, sessionDSNTests(ctx))
	for _, name := range slices.Sorted(maps.Keys(withDSN)) {
		t.Run(name, func(t *testing.T) { withDSN[name](t, newDSN(t)) })
	}
}

// backlog writes checks from..to (u<i>), each with a down flip and a
// pending delivery to the channel "hook", due at t0, straight into the
// database, then has the database update its statistics (as autovacuum
// would have by now): check i is in namespace team-<i> when every is not
// zero and i is a multiple of it, in namespace flood otherwise.
func backlog(t *testing.T, db *sql.DB, from, to, every int) {
	t.Helper()
	ns := `'flood'`
	if every > 0 {
		ns = fmt.Sprintf(`CASE WHEN n %% %d = 0 THEN 'team-' || n ELSE 'flood' END`, every)
	}
	// Literal values: the statements run as written on every backend.
	series := fmt.Sprintf(`WITH RECURSIVE i(n) AS (SELECT %d UNION ALL SELECT n + 1 FROM i WHERE n < %d)`, from, to)
	for _, stmt := range []string{
		`INSERT INTO checks (uid, namespace, name, version) ` + series + ` SELECT 'u' || n, ` + ns + `, 'check-' || n, 1 FROM i`,
		`INSERT INTO flips (check_uid, n, created, up, from_state, to_state) ` + series +
			fmt.Sprintf(` SELECT 'u' || n, 1, %d, FALSE, 'up', 'down' FROM i`, t0.UnixMicro()),
		`INSERT INTO channels (namespace, name) ` + series + ` SELECT DISTINCT ` + ns + `, 'hook' FROM i WHERE TRUE
			ON CONFLICT (namespace, name) DO NOTHING`,
		`INSERT INTO deliveries (check_uid, flip_n, channel_id, state, next_attempt, namespace) ` + series +
			fmt.Sprintf(` SELECT 'u' || n, 1, c.id, 'pending', %d, c.namespace FROM i JOIN channels c ON c.namespace = `, t0.UnixMicro()) +
			ns + ` AND c.name = 'hook'`,
		`ANALYZE`,
	} {
		if _, err := db.ExecContext(context.Background(), stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
}

// checkTurns asserts that when the answer has room for one namespace, or
// for all but one, the namespaces that owe due deliveries (namespaces, in
// byte order) take turns in byte order, as Go compares strings: from the
// one after the namespace served last, round and round.
func checkTurns(t *testing.T, s *store.Store, now time.Time, namespaces []string) {
	t.Helper()
	if !slices.IsSorted(namespaces) {
		t.Fatalf("checkTurns wants its namespaces in byte order: %v", namespaces)
	}
	served := func(q store.DueQuery) []string {
		t.Helper()
		q.PerNamespace = 1
		due, err := s.DueDeliveries(context.Background(), now, q)
		must(t, err)
		var out []string
		for _, d := range due {
			out = append(out, d.Namespace)
		}
		slices.Sort(out)
		return out
	}
	n := len(namespaces)
	for i, after := range namespaces {
		if got, want := served(store.DueQuery{Limit: 1, After: after}), namespaces[(i+1)%n:(i+1)%n+1]; !slices.Equal(got, want) {
			t.Errorf("one namespace's turn after %q: %v, want %v", after, got, want)
		}
		// All but the one served last, whichever end of the order it is at.
		want := slices.Delete(slices.Clone(namespaces), i, i+1)
		if got := served(store.DueQuery{Limit: n - 1, After: after}); !slices.Equal(got, want) {
			t.Errorf("%d namespaces' turns after %q: %v, want %v", n-1, after, got, want)
		}
	}
}

// windows are one-off maintenance windows, each a name and its start and
// end after t0.
func windows(t *testing.T, spec ...any) maintenance.Set {
	t.Helper()
	var set maintenance.Set
	for i := 0; i+2 < len(spec); i += 3 {
		from, to := metav1.NewTime(t0.Add(spec[i+1].(time.Duration))), metav1.NewTime(t0.Add(spec[i+2].(time.Duration)))
		w, err := maintenance.Compile(&v1.MaintenanceWindow{ObjectMeta: metav1.ObjectMeta{Name: spec[i].(string)},
			Spec: v1.MaintenanceWindowSpec{CheckSelection: v1.CheckSelection{Checks: []string{"x"}}, From: &from, To: &to}})
		must(t, err)
		set = append(set, w)
	}
	return set
}

func fmtUntil(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// drain delivers every pending notification as the outbox hands them out
// and returns them as "<kind> to <channel>" (the flip's direction, or the
// notice's kind), by channel, each channel's in the order it heard them.
func drain(t *testing.T, s *store.Store) []string {
	t.Helper()
	var out []string
	for range 100 {
		due, err := s.DueDeliveries(context.Background(), t0.Add(1000*time.Hour), store.DueQuery{Limit: 100})
		must(t, err)
		if len(due) == 0 {
			return byChannel(out)
		}
		sort.Slice(due, func(i, j int) bool {
			if due[i].Flip.N != due[j].Flip.N {
				return due[i].Flip.N < due[j].Flip.N
			}
			return due[i].Channel < due[j].Channel
		})
		var outcomes []store.Outcome
		for _, d := range due {
			kind := string(d.Flip.Notice)
			switch {
			case kind != "":
			case d.Flip.Up:
				kind = "up"
			default:
				kind = "down"
			}
			out = append(out, kind+" to "+d.Channel)
			outcomes = append(outcomes, store.Outcome{CheckUID: d.CheckUID, FlipN: d.Flip.N, Channel: d.Channel,
				State: store.DeliveryDelivered, Attempted: true})
		}
		must(t, s.RecordOutcomes(context.Background(), outcomes))
	}
	t.Fatal("the outbox never drained")
	return nil
}

// byChannel orders drained notifications by channel, keeping each
// channel's order.
func byChannel(out []string) []string {
	channel := func(s string) string { return s[strings.LastIndex(s, " to ")+4:] }
	sort.SliceStable(out, func(i, j int) bool { return channel(out[i]) < channel(out[j]) })
	return out
}

func kindsOf(pings []store.LoggedPing) []monitor.PingKind {
	var out []monitor.PingKind
	for _, p := range pings {
		out = append(out, p.Kind)
	}
	return out
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// descending is hi, hi-1, …, lo.
func descending(hi, lo int64) []int64 {
	var out []int64
	for n := hi; n >= lo; n-- {
		out = append(out, n)
	}
	return out
}

// channelNumber is the number of a Channel in SQL, for statements that
// write the outbox straight into the database.
func channelNumber(namespace, name string) string {
	return fmt.Sprintf(`(SELECT id FROM channels WHERE namespace = '%s' AND name = '%s')`, namespace, name)
}
