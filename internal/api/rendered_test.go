package api

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/checks"
	"github.com/vigil-operator/vigil/internal/monitor"
)

// A check is rendered again exactly when something its JSON is made of
// changed since it was cached; otherwise the cached JSON is returned.
func TestRenderedChecksRenderWhatChanged(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC)
	base := renderKey{generation: 7, view: checks.View{Status: monitor.StatusUp, LastPing: t0, NPings: 3}}
	changed := map[string]func(renderKey) renderKey{
		"generation": func(k renderKey) renderKey { k.generation = 8; return k },
		"status":     func(k renderKey) renderKey { k.view.Status = monitor.StatusGrace; return k },
		"pings":      func(k renderKey) renderKey { k.view.NPings++; return k },
		"last ping":  func(k renderKey) renderKey { k.view.LastPing = t0.Add(time.Second); return k },
		"next ping":  func(k renderKey) renderKey { k.view.HasNext = true; return k },
		"channels":   func(k renderKey) renderKey { k.channels = 99; return k },
	}
	for name, change := range changed {
		t.Run(name, func(t *testing.T) {
			var rc renderedChecks
			renders := 0
			render := func(s string) func() []byte {
				return func() []byte { renders++; return []byte(s) }
			}
			listOne(&rc, ns, true, at, base, render("first"))
			if got := listOne(&rc, ns, true, at, base, render("second")); got != "first" || renders != 1 {
				t.Fatalf("same key: got %q after %d renders, want the cached one", got, renders)
			}
			if got := listOne(&rc, ns, true, at, change(base), render("third")); got != "third" || renders != 2 {
				t.Fatalf("changed %s: got %q after %d renders, want a new rendering", name, got, renders)
			}
			if got := listOne(&rc, ns, false, at, base, render("fourth")); got != "fourth" {
				t.Fatalf("back to the first key: got %q, want a new rendering", got)
			}
		})
	}
}

// listOne lists a project of one check, whole: what it renders is kept
// when full.
func listOne(rc *renderedChecks, form listForm, full bool, at time.Time, key renderKey, render func() []byte) string {
	p := rc.pass(form, full, nil, at)
	b := p.json("uid", key, render)
	p.finish()
	return string(b)
}

// ns is the form of the tests' lists, and at their instant.
var (
	ns = listForm{namespace: "ns", version: 3}
	at = time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC)
)

// Checks are cached per project and form: the same UID in another
// namespace, or listed in another API version or with a read-only key,
// never reads this form's JSON, and does not replace it either.
func TestRenderedChecksAreByProjectAndForm(t *testing.T) {
	var rc renderedChecks
	key := renderKey{generation: 1}
	listOne(&rc, ns, true, at, key, func() []byte { return []byte("ns v3") })
	for _, other := range []listForm{{namespace: "b", version: 3}, {namespace: "ns", version: 1}, {namespace: "ns", version: 3, readOnly: true}} {
		name := fmt.Sprint(other)
		if got := listOne(&rc, other, true, at, key, func() []byte { return []byte(name) }); got != name {
			t.Fatalf("%v read %q", other, got)
		}
	}
	if got := listOne(&rc, ns, true, at, key, func() []byte { return []byte("again") }); got != "ns v3" {
		t.Fatalf("the other forms replaced ns v3's JSON: %q", got)
	}
}

// Only complete unfiltered lists keep what they render, and each forgets
// the checks it did not show; a list the client left is no proof that the
// checks it did not reach are gone. A list out of step with the last
// (a check deleted, one new, a filtered list) still finds each kept check.
func TestRenderedChecksHoldOnlyWhatTheLastListShowed(t *testing.T) {
	var rc renderedChecks
	key := renderKey{generation: 1}
	renders := 0
	list := func(full, complete bool, uids ...types.UID) {
		p := rc.pass(ns, full, nil, at)
		for _, uid := range uids {
			if got := string(p.json(uid, key, func() []byte { renders++; return []byte(uid) })); got != string(uid) {
				t.Fatalf("%s read %q", uid, got)
			}
		}
		if complete {
			p.finish()
		}
	}
	held := func() string {
		var uids []types.UID
		if proj := rc.projects[ns]; proj != nil && proj.listed != nil {
			for _, c := range proj.listed.checks {
				uids = append(uids, c.uid)
			}
		}
		return fmt.Sprint(uids)
	}
	list(false, true, "a", "b")
	if got := held(); got != "[]" {
		t.Fatalf("a filtered list kept %v", got)
	}
	list(true, true, "a", "b", "c")
	list(true, false, "a")
	if got := held(); got != "[a b c]" {
		t.Fatalf("an incomplete list changed what is kept: %v", got)
	}
	renders = 0
	list(false, true, "c", "a")
	list(true, true, "a", "c", "d")
	if got := held(); got != "[a c d]" || renders != 1 {
		t.Fatalf("after b was deleted and d created: %s kept, %d rendered (want d alone)", got, renders)
	}
	list(true, true)
	if _, ok := rc.projects[ns]; ok {
		t.Fatal("a project without checks is still held")
	}
}

// A project's channels are numbered by what a check's "channels" field
// reads of them: the same channels keep their number, any change of name,
// ID or order gets a number never used before, and read-only keys (which
// see no channels) use 0.
func TestRenderedChecksNumberTheChannelsTheySaw(t *testing.T) {
	var rc renderedChecks
	ch := func(pairs ...string) []v1.Channel {
		list := []v1.Channel{}
		for i := 0; i < len(pairs); i += 2 {
			c := v1.Channel{}
			c.Name, c.UID = pairs[i], types.UID(pairs[i+1])
			list = append(list, c)
		}
		return list
	}
	seen := map[uint64]string{}
	number := func(channels []v1.Channel, identity string) uint64 {
		n := rc.pass(ns, true, channels, at).channels
		if was, ok := seen[n]; ok && was != identity {
			t.Fatalf("number %d given to %s and to %s", n, was, identity)
		}
		seen[n] = identity
		return n
	}
	first := number(ch("slack", "u1"), "slack u1")
	if first == 0 {
		t.Fatal("read-write channels numbered 0")
	}
	if again := number(ch("slack", "u1"), "slack u1"); again != first {
		t.Fatalf("the same channels numbered %d then %d", first, again)
	}
	for _, c := range []struct {
		channels []v1.Channel
		identity string
	}{
		{ch("slack", "u2"), "slack u2"},
		{ch("email", "u1"), "email u1"},
		{ch("slack", "u1", "email", "u3"), "slack u1, email u3"},
		{ch("email", "u3", "slack", "u1"), "email u3, slack u1"},
		{ch(), "none"},
		{ch("slack", "u1"), "slack u1 again"},
	} {
		if n := number(c.channels, c.identity); n == 0 || n == first {
			t.Fatalf("%s numbered %d", c.identity, n)
		}
	}
	if n := rc.pass(ns, true, nil, at).channels; n != 0 {
		t.Fatalf("a read-only list's channels numbered %d", n)
	}
}

// A filtered list of a read-write key reads renderings only when the
// project's channels are those they were made with.
func TestRenderedChecksFilteredListsReadOnlyTheirChannels(t *testing.T) {
	var rc renderedChecks
	slack := []v1.Channel{{}}
	slack[0].Name, slack[0].UID = "slack", "u1"
	email := []v1.Channel{{}}
	email[0].Name, email[0].UID = "email", "u2"
	key := func(p *listPass) renderKey { return renderKey{generation: 1, channels: p.channels} }
	full := rc.pass(ns, true, slack, at)
	full.json("uid", key(full), func() []byte { return []byte("with slack") })
	full.finish()
	same := rc.pass(ns, false, slack, at)
	if got := string(same.json("uid", key(same), func() []byte { return []byte("again") })); got != "with slack" {
		t.Fatalf("the same channels: %q", got)
	}
	other := rc.pass(ns, false, email, at)
	if got := string(other.json("uid", key(other), func() []byte { return []byte("with email") })); got != "with email" {
		t.Fatalf("other channels read %q", got)
	}
	var fresh renderedChecks
	first := fresh.pass(ns, false, slack, at)
	if first.channels == 0 || len(fresh.projects) != 0 {
		t.Fatalf("a first filtered list numbered its channels %d and made %d projects", first.channels, len(fresh.projects))
	}
}

// A form no unfiltered list has shown for formIdle is forgotten at the
// next list of any project; one listed within it stays.
func TestRenderedChecksForgetIdleForms(t *testing.T) {
	var rc renderedChecks
	key := renderKey{generation: 1}
	gone, kept := listForm{namespace: "gone", version: 3}, listForm{namespace: "kept", version: 3}
	listOne(&rc, gone, true, at, key, func() []byte { return []byte("g") })
	listOne(&rc, kept, true, at, key, func() []byte { return []byte("k") })
	listOne(&rc, kept, true, at.Add(formIdle-time.Minute), key, func() []byte { return []byte("k2") })
	rc.pass(ns, false, nil, at.Add(formIdle))
	if _, ok := rc.projects[gone]; ok {
		t.Fatal("a form idle for formIdle is still held")
	}
	if _, ok := rc.projects[kept]; !ok {
		t.Fatal("a form listed within formIdle was forgotten")
	}
}

// Lists of several forms at once, some filtered, some left by their
// client, never return a rendering made from another key.
func TestRenderedChecksUnderConcurrentLists(t *testing.T) {
	var rc renderedChecks
	forms := []listForm{ns, {namespace: "ns", version: 1}, {namespace: "other", version: 3}}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 300 {
				form := forms[(g+i)%len(forms)]
				p := rc.pass(form, i%4 != 0, nil, at.Add(time.Duration(i)*time.Second))
				for c := range 20 {
					key := renderKey{generation: int64((i / 7) % 3), view: checks.View{NPings: int64(c + g%2)}}
					want := fmt.Sprint(form, c, key.generation, key.view.NPings)
					if got := string(p.json(types.UID(fmt.Sprint(c)), key, func() []byte { return []byte(want) })); got != want {
						t.Errorf("got %q, want %q", got, want)
						return
					}
				}
				if i%5 != 0 {
					p.finish()
				}
			}
		}()
	}
	wg.Wait()
}
