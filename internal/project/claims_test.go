package project

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/vigil-operator/vigil/internal/store"
)

// A project that re-creates its Secret keeps its keys, though a copy in
// another project is older by then: the ping store remembers who held them
// first.
func TestRegistryClaimsOutlastASecret(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st, err := store.Open(ctx, "sqlite:"+filepath.Join(t.TempDir(), "vigil.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	r := NewRegistry()
	r.RecordClaims(ctx, st)

	rw, stored, _ := NewAPIKey(ReadWrite)
	data := map[string]string{DataReadWriteKeys: stored, DataPingKey: "pingvvvvvvvvvvvvvvvvvv"}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	victim := projectSecret("victim", "vigil-project", data)
	victim.CreationTimestamp = metav1.NewTime(t0)
	r.Upsert(victim)
	owned := func(ns string) bool {
		info, ok := r.ByPingKey("pingvvvvvvvvvvvvvvvvvv")
		got, _ := r.Authenticate(rw)
		return ok && info.Namespace == ns && got == ns
	}
	eventually(t, func() bool { r.mu.RLock(); defer r.mu.RUnlock(); return len(r.synced["victim"]) == 2 })
	if !owned("victim") {
		t.Fatal("the victim does not own its keys")
	}

	copied := projectSecret("aaa-copier", "vigil-project", data)
	copied.CreationTimestamp = metav1.NewTime(t0.Add(time.Hour))
	r.Upsert(copied)
	eventually(t, func() bool { r.mu.RLock(); defer r.mu.RUnlock(); return len(r.synced["aaa-copier"]) == 2 })
	if !owned("victim") {
		t.Fatal("a copy took the keys")
	}

	// The victim's Secret is deleted: its keys open nothing meanwhile.
	r.Remove(victim)
	eventually(t, func() bool { r.mu.RLock(); defer r.mu.RUnlock(); _, ok := r.synced["victim"]; return !ok })
	if _, ok := r.ByPingKey("pingvvvvvvvvvvvvvvvvvv"); ok {
		t.Error("the copy's ping key opens the project while the victim re-creates its Secret")
	}
	if ns, _ := r.Authenticate(rw); ns != "" {
		t.Errorf("the copied API key opens %q while the victim re-creates its Secret", ns)
	}
	// Re-created, now newer than the copy, it is still the victim's.
	recreated := victim.DeepCopy()
	recreated.CreationTimestamp = metav1.NewTime(t0.Add(2 * time.Hour))
	r.Upsert(recreated)
	eventually(t, func() bool { r.mu.RLock(); defer r.mu.RUnlock(); return len(r.synced["victim"]) == 2 })
	if !owned("victim") {
		t.Error("the re-created Secret lost its keys to the copy")
	}
}

// eventually waits until cond holds: the registry records claims on its
// own goroutine.
func eventually(t *testing.T, cond func() bool) {
	t.Helper()
	gomega.NewWithT(t).Eventually(cond).WithTimeout(10*time.Second).WithPolling(5*time.Millisecond).
		Should(gomega.BeTrue(), "condition not met in 10 s")
}

// What a namespace's Secrets cost the ping store is bounded by its limits:
// keys past them are not recorded, and keys rotated away go once their
// hold has passed.
func TestRegistryRecordsKeysWithinLimits(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st, err := store.Open(ctx, "sqlite:"+filepath.Join(t.TempDir(), "vigil.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	r := NewRegistry()
	r.Limits = &Limits{DefaultKeyLimit: 100}
	r.RecordClaims(ctx, st)
	rows := func() int64 {
		t.Helper()
		keys, _, err := st.OwnerRows(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return keys
	}
	synced := func(ns string, id string) func() bool {
		return func() bool { r.mu.RLock(); defer r.mu.RUnlock(); return slices.Contains(r.synced[ns], id) }
	}

	big := aged("big", "vigil-project", 0, map[string]string{DataReadWriteKeys: keyLines("big", 0, 5000), DataPingKey: "pingbbbbbbbbbbbbbbbbbb"})
	r.Upsert(big)
	first := StoredKey{value: []byte(apiKey("big", 0))}
	eventually(t, synced("big", first.identity()))
	if got := rows(); got != 101 {
		t.Fatalf("%d key rows for 5,000 key lines and a ping key, want the 100 keys within the limit and the ping key", got)
	}

	// The tenant rotates every key: the old ones are held for a day, then
	// pruned.
	rotated := big.DeepCopy()
	rotated.Data[DataReadWriteKeys] = []byte(keyLines("big", 5000, 5000))
	r.Upsert(rotated)
	eventually(t, synced("big", StoredKey{value: []byte(apiKey("big", 5000))}.identity()))
	if got := rows(); got != 201 {
		t.Fatalf("%d key rows after a rotation, want 201", got)
	}
	if _, err := st.PruneOwners(ctx, time.Now().Add(store.UUIDHold+time.Minute)); err != nil {
		t.Fatal(err)
	}
	if got := rows(); got != 101 {
		t.Fatalf("%d key rows once the rotated keys' hold passed, want 101", got)
	}
}

// Key holds of a namespace whose project Secrets went while no manager ran
// are released once the registry is ready, so that they pass and are
// pruned; the holds of namespaces whose Secrets are there stay. The holds
// start on the registry's Clock, the one the pruning reads.
func TestRegistryReleasesHoldsWithoutSecrets(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st, err := store.Open(ctx, "sqlite:"+filepath.Join(t.TempDir(), "vigil.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	// A previous manager recorded two namespaces' keys; one's Secret was
	// deleted while no manager ran.
	kept := aged("kept", "vigil-project", 0, map[string]string{DataReadWriteKeys: keyLines("kept", 0, 2)})
	var ids []string
	for _, k := range ParseKeys(kept.Data[DataReadWriteKeys]) {
		ids = append(ids, k.identity())
	}
	recorded := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	if _, err := st.SyncKeys(ctx, "kept", ids[:1], recorded); err != nil {
		t.Fatal(err)
	}
	if _, err := st.SyncKeys(ctx, "gone", []string{"api:gone"}, recorded); err != nil {
		t.Fatal(err)
	}

	clk := testingclock.NewFakeClock(recorded.Add(time.Hour))
	r := NewRegistry()
	r.Clock = clk
	r.Upsert(kept)
	r.RecordClaims(ctx, st)
	holders := func() []string {
		ns, err := st.KeyHolders(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return ns
	}
	eventually(t, func() bool { return slices.Equal(holders(), []string{"kept"}) })
	eventually(t, func() bool { r.mu.RLock(); defer r.mu.RUnlock(); return len(r.synced["kept"]) == 2 })
	// Released at the registry's clock: pruned once the hold has passed
	// on it, whatever the wall clock says.
	if _, err := st.PruneOwners(ctx, clk.Now().Add(store.UUIDHold+time.Minute)); err != nil {
		t.Fatal(err)
	}
	if keys, _, _ := st.OwnerRows(ctx); keys != 2 {
		t.Errorf("%d key rows once the released holds passed, want the kept namespace's 2", keys)
	}
}
