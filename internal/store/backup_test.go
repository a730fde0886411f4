package store_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"

	"github.com/vigil-operator/vigil/internal/monitor"
	"github.com/vigil-operator/vigil/internal/store"
)

// acked is a ping the store acknowledged.
type acked struct {
	uid types.UID
	n   int64
}

// TestBackupUnderLoad takes a backup while writers keep recording pings,
// restores it where a fresh manager would open its store, and finds there
// every ping acknowledged before the backup began.
func TestBackupUnderLoad(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	dsn := "sqlite:" + filepath.Join(dir, "vigil.db")
	s, err := store.Open(ctx, dsn, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	targets := make([]store.Target, 20)
	for i := range targets {
		targets[i] = store.Target{UID: types.UID(fmt.Sprintf("u%d", i)), Namespace: "ns", Name: fmt.Sprintf("c%d", i),
			Config: monitor.Config{Timeout: time.Hour, Grace: time.Hour}, PingLogLimit: 100_000}
	}
	var (
		mu   sync.Mutex
		acks []acked
		stop = make(chan struct{})
		load sync.WaitGroup
	)
	body := []byte(strings.Repeat("log line\n", 100))
	for w := range 4 {
		load.Go(func() {
			for i := w; ; i += 4 {
				select {
				case <-stop:
					return
				default:
				}
				tg := targets[i%len(targets)]
				rec, err := s.RecordPing(ctx, tg, store.Ping{Kind: monitor.PingSuccess, At: time.Now(), Body: body})
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				acks = append(acks, acked{tg.UID, rec.N})
				mu.Unlock()
			}
		})
	}
	acknowledged := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(acks)
	}
	g := gomega.NewWithT(t)
	waitFor := func(n int) {
		t.Helper()
		g.Eventually(acknowledged).WithTimeout(time.Minute).WithPolling(5*time.Millisecond).
			Should(gomega.BeNumerically(">=", n), "pings acknowledged")
	}
	waitFor(500)
	mu.Lock()
	before := append([]acked(nil), acks...)
	mu.Unlock()
	backup := filepath.Join(t.TempDir(), "backup.db")
	info, err := store.Backup(ctx, dsn, backup)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(len(before) + 200) // the writers went on, and still do
	close(stop)
	load.Wait()
	if info.Version != store.SchemaVersion() || info.Checks != int64(len(targets)) || info.Pings < int64(len(before)) {
		t.Fatalf("backup %+v: want schema %d, %d checks, at least %d pings", info, store.SchemaVersion(), len(targets), len(before))
	}
	if fi, err := os.Stat(backup); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("backup file %v, %v: want mode 0600", fi, err)
	}
	if _, err := os.Stat(backup + ".partial"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the partial copy is left behind: %v", err)
	}

	restored := "sqlite:" + filepath.Join(t.TempDir(), "data", "vigil.db")
	if err := os.MkdirAll(filepath.Join(strings.TrimPrefix(restored, "sqlite:"), ".."), 0o750); err != nil {
		t.Fatal(err)
	}
	if _, aside, err := store.Restore(ctx, backup, restored, time.Now()); err != nil || aside != "" {
		t.Fatalf("restore: aside %q, %v", aside, err)
	}
	r, err := store.Open(ctx, restored, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	held := map[acked]bool{}
	for _, tg := range targets {
		pings, err := r.Pings(ctx, tg.UID, 100_000)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pings {
			held[acked{tg.UID, p.N}] = true
		}
	}
	for _, a := range before {
		if !held[a] {
			t.Fatalf("ping %d of %s, acknowledged before the backup began, is not in it", a.n, a.uid)
		}
	}
	// The restored store takes pings where the backup left off.
	rec, err := r.RecordPing(ctx, targets[0], store.Ping{Kind: monitor.PingSuccess, At: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	c, _, err := r.Check(ctx, targets[0].UID)
	if err != nil || rec.N != c.NPings || !held[acked{targets[0].UID, rec.N - 1}] {
		t.Fatalf("the next ping is number %d (check %+v, %v): want the one after the backup's last", rec.N, c, err)
	}
}

// TestRestore: a restore refuses a store a manager has open, a damaged
// backup and one from a newer Vigil, and moves the store it replaces
// aside with its WAL.
func TestRestore(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	dsn := "sqlite:" + filepath.Join(dir, "vigil.db")
	s, err := store.Open(ctx, dsn, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tg := store.Target{UID: "old", Namespace: "ns", Name: "old", Config: monitor.Config{Timeout: time.Hour, Grace: time.Hour}}
	if _, err := s.RecordPing(ctx, tg, store.Ping{Kind: monitor.PingSuccess, At: time.Now()}); err != nil {
		t.Fatal(err)
	}
	backup := filepath.Join(t.TempDir(), "backup.db")
	if _, err := store.Backup(ctx, dsn, backup); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Backup(ctx, dsn, backup); err == nil || !strings.Contains(err.Error(), "exists") {
		t.Fatalf("a second backup to the same file: %v, want it refused", err)
	}
	if _, _, err := store.Restore(ctx, backup, dsn, time.Now()); !errors.Is(err, store.ErrInUse) {
		t.Fatalf("restoring over a store in use: %v, want ErrInUse", err)
	}
	if _, err := s.RecordPing(ctx, tg, store.Ping{Kind: monitor.PingFail, At: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	damaged := filepath.Join(t.TempDir(), "damaged.db")
	if err := os.WriteFile(damaged, []byte("SQLite format 3\x00 but not really"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := store.Restore(ctx, damaged, dsn, time.Now()); err == nil {
		t.Fatal("a damaged backup was restored")
	}
	newer := filepath.Join(t.TempDir(), "newer.db")
	if _, err := store.Backup(ctx, "sqlite:"+backup, newer); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", newer)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO goose_db_version (version_id, is_applied) VALUES (9999, TRUE)`); err != nil {
		t.Fatal(err)
	}
	_ = db.Close()
	if _, _, err := store.Restore(ctx, newer, dsn, time.Now()); err == nil || !strings.Contains(err.Error(), "newer than this vigil's") {
		t.Fatalf("a backup from a newer vigil: %v, want it refused", err)
	}

	when := time.Date(2026, 11, 29, 1, 2, 3, 0, time.UTC)
	info, aside, err := store.Restore(ctx, backup, dsn, when)
	if err != nil || info.Pings != 1 {
		t.Fatalf("restore: %+v, %v", info, err)
	}
	if want := filepath.Join(dir, "vigil.db.before-restore-20261129T010203Z"); aside != want {
		t.Fatalf("moved aside to %q, want %q", aside, want)
	}
	if old, err := store.Inspect(ctx, aside); err != nil || old.Pings != 2 {
		t.Fatalf("the store moved aside: %+v, %v; want its 2 pings", old, err)
	}
	s, err = store.Open(ctx, dsn, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if c, _, err := s.Check(ctx, "old"); err != nil || c.NPings != 1 || c.Facts.State != monitor.StatusUp {
		t.Fatalf("restored check %+v, %v: want the backup's one success", c, err)
	}
	if _, err := store.Backup(ctx, "postgres://db/vigil", filepath.Join(dir, "pg.db")); !errors.Is(err, store.ErrNotEmbedded) {
		t.Fatalf("backing up PostgreSQL: %v, want ErrNotEmbedded", err)
	}
}
