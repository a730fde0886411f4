package project

import (
	"context"
	"strings"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"
)

// Lookups never build: they answer from the parts last built, and a build
// runs without the registry's lock, so a lookup during one answers at once,
// from the part before it. (Issue #24's follow-up review measured lookups
// held for half a second a rebuild while a tenant edited a Secret.)
func TestLookupDuringARebuildDoesNotWaitForIt(t *testing.T) {
	r := NewRegistry()
	before, after := apiKey("busy", 0), apiKey("busy", 1)
	r.Upsert(aged("busy", "vigil-project", 0, map[string]string{DataReadWriteKeys: before}))
	r.Upsert(aged("quiet", "vigil-project", 0, map[string]string{DataReadWriteKeys: apiKey("quiet", 0)}))
	r.rebuildAll()

	// An edit: until a build, lookups answer as before it.
	r.Upsert(aged("busy", "vigil-project", 0, map[string]string{DataReadWriteKeys: before + "\n" + after}))
	if ns, _ := r.Authenticate(after); ns != "" || r.built != 2 {
		t.Fatalf("a lookup after an edit opened %q with %d builds: lookups build", ns, r.built)
	}

	inBuild, release, done := make(chan struct{}), make(chan struct{}), make(chan struct{})
	r.beforeBuild = func(string) { close(inBuild); <-release }
	go func() { defer close(done); r.rebuildAll() }()
	<-inBuild
	if !r.mu.TryRLock() {
		close(release)
		<-done
		t.Fatal("a build holds the registry's lock: lookups wait for it")
	}
	r.mu.RUnlock()
	for key, want := range map[string]string{before: "busy", after: "", apiKey("quiet", 0): "quiet"} {
		if ns, _ := r.Authenticate(key); ns != want {
			t.Errorf("during the build, %s opens %q, want %q", key, ns, want)
		}
	}
	close(release)
	<-done
	if ns, _ := r.Authenticate(after); ns != "busy" {
		t.Errorf("after the build, the new key opens %q", ns)
	}
}

// A namespace whose Secrets keep changing is built no more often than
// minRebuild; another namespace's first event is built at once.
func TestRebuildPace(t *testing.T) {
	r := NewRegistry()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	edit := func(ns string, i int) {
		r.Upsert(aged(ns, "vigil-project", 0, map[string]string{DataReadWriteKeys: apiKey(ns, i)}))
	}
	edit("busy", 0)
	if next := r.rebuild(t0, false); next != 0 || r.built != 1 {
		t.Fatalf("first event: %d builds, next in %v; want 1, none", r.built, next)
	}
	for i := 1; i <= 10; i++ {
		edit("busy", i) // a tenant edits in a loop
	}
	edit("other", 0)
	next := r.rebuild(t0.Add(minRebuild/5), false)
	if r.built != 2 || next != minRebuild*4/5 {
		t.Fatalf("%v after the first build: %d builds, next in %v; want 2 (the other namespace only), next in %v",
			minRebuild/5, r.built, next, minRebuild*4/5)
	}
	if ns, _ := r.Authenticate(apiKey("busy", 10)); ns != "" {
		t.Fatal("the busy namespace was built again before minRebuild")
	}
	if next := r.rebuild(t0.Add(minRebuild), false); next != 0 || r.built != 3 {
		t.Fatalf("at minRebuild: %d builds, next in %v; want 3, none", r.built, next)
	}
	if ns, _ := r.Authenticate(apiKey("busy", 10)); ns != "busy" {
		t.Error("the busy namespace's last edit is not built")
	}
}

// The build loop builds a moment (settle) after events, on its own pace
// clock; lookups meanwhile answer from what was built before.
func TestBuildLoop(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pace := testingclock.NewFakeClock(time.Now())
	r := NewRegistry()
	r.pace = pace
	r.start(ctx)
	key := apiKey("team", 0)
	r.Upsert(aged("team", "vigil-project", 0, map[string]string{DataReadWriteKeys: key}))
	eventually(t, pace.HasWaiters) // the loop waits for the burst to settle
	if ns, _ := r.Authenticate(key); ns != "" || r.Ready() {
		t.Fatalf("before the loop built: the key opens %q, ready %v", ns, r.Ready())
	}
	pace.Step(settle)
	eventually(t, r.Ready)
	if ns, _ := r.Authenticate(key); ns != "team" {
		t.Errorf("after the loop built, the key opens %q", ns)
	}
}

// The message of a Secret cut by the budget of lines that are not keys
// says so, and how to fix it.
func TestRegistryOtherLineLimit(t *testing.T) {
	r := NewRegistry()
	r.Limits = &Limits{DefaultKeyLimit: 10}
	heard := listen(r)
	r.Upsert(aged("chatty", "vigil-project", 0, map[string]string{
		DataReadWriteKeys: strings.Repeat("# note\n", 10+otherLineAllowance+1) + keyLines("chatty", 0, 1)}))
	r.rebuildAll()
	if ns, _ := r.Authenticate(apiKey("chatty", 0)); ns != "" {
		t.Errorf("a key past the budget of other lines opens %q", ns)
	}
	if len(*heard) != 1 || !strings.Contains((*heard)[0].message, "more than 110 lines that are not API keys") ||
		!strings.Contains((*heard)[0].message, "read-write-keys from line 111 on are ignored") ||
		!strings.Contains((*heard)[0].message, "Remove those lines") {
		t.Errorf("told %q", *heard)
	}
}
