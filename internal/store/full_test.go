package store_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/vigil-operator/vigil/internal/monitor"
	"github.com/vigil-operator/vigil/internal/store"
)

// smallVolume mounts a tmpfs of size bytes: a filesystem that fills. It
// needs root (CI runs as root); it fails, never skips, without it.
func smallVolume(t *testing.T, size string) string {
	t.Helper()
	vol := filepath.Join(t.TempDir(), "vol")
	if err := os.Mkdir(vol, 0o750); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.CommandContext(context.Background(), "mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", vol).CombinedOutput(); err != nil {
		t.Fatalf("mounting a %s tmpfs for the full-volume test needs root (CI runs as root): %v: %s", size, err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.CommandContext(context.Background(), "umount", vol).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", vol, err, out)
		}
	})
	return vol
}

// TestFullVolume fills the store's filesystem: pings are refused with
// ErrFull (a kind of ErrUnavailable), nothing of a refused ping is
// written, reads go on, and writing resumes by itself once space is
// freed, with every acknowledged ping still there.
func TestFullVolume(t *testing.T) {
	ctx := context.Background()
	vol := smallVolume(t, "4m")
	var mu sync.Mutex
	var said []bool
	dsn := "sqlite:" + filepath.Join(vol, "vigil.db")
	s, err := store.Open(ctx, dsn, store.Options{OnFull: func(full bool, _ error) {
		mu.Lock()
		said = append(said, full)
		mu.Unlock()
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tg := store.Target{UID: "u1", Namespace: "ns", Name: "c", Config: monitor.Config{Timeout: time.Hour, Grace: time.Hour}, PingLogLimit: 100_000}
	if _, err := s.RecordPing(ctx, tg, store.Ping{Kind: monitor.PingSuccess, At: time.Now()}); err != nil {
		t.Fatal(err)
	}
	// A file takes all the room but 256 KiB.
	available, size, ok := s.Volume()
	if !ok || size > 5<<20 || available < 1<<20 {
		t.Fatalf("volume: %d of %d bytes available, %v", available, size, ok)
	}
	filler := filepath.Join(vol, "filler")
	if err := os.WriteFile(filler, make([]byte, available-256<<10), 0o600); err != nil {
		t.Fatal(err)
	}
	body := make([]byte, 8<<10)
	acked := int64(1)
	for {
		rec, err := s.RecordPing(ctx, tg, store.Ping{Kind: monitor.PingSuccess, At: time.Now(), Body: body})
		if err != nil {
			if !errors.Is(err, store.ErrFull) || !errors.Is(err, store.ErrUnavailable) || !s.Unavailable(err) {
				t.Fatalf("after %d pings: %v, want ErrFull", acked, err)
			}
			break
		}
		if acked++; rec.N != acked || acked > 1000 {
			t.Fatalf("ping %d numbered %d; the volume never filled", acked, rec.N)
		}
	}
	t.Logf("the volume filled after %d pings", acked)
	if !s.Full() {
		t.Fatal("Full is false after a write failed for want of space")
	}
	// Nothing of the refused ping was written, and reads go on.
	c, _, err := s.Check(ctx, tg.UID)
	if err != nil || c.NPings != acked {
		t.Fatalf("check %+v, %v: want %d pings", c, err, acked)
	}
	pings, err := s.Pings(ctx, tg.UID, 100_000)
	if err != nil || int64(len(pings)) != acked {
		t.Fatalf("%d pings logged, %v: want %d", len(pings), err, acked)
	}
	if _, err := s.RecordPing(ctx, tg, store.Ping{Kind: monitor.PingFail, At: time.Now()}); !errors.Is(err, store.ErrFull) {
		t.Fatalf("still full: %v, want ErrFull", err)
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	rec, err := s.RecordPing(ctx, tg, store.Ping{Kind: monitor.PingSuccess, At: time.Now(), Body: body})
	if err != nil || rec.N != acked+1 {
		t.Fatalf("after space was freed: ping %d, %v; want number %d", rec.N, err, acked+1)
	}
	if s.Full() {
		t.Fatal("Full is still true after a write succeeded")
	}
	mu.Lock()
	if !slices.Equal(said, []bool{true, false}) {
		t.Errorf("OnFull said %v, want once full and once writable again", said)
	}
	mu.Unlock()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	info, err := store.Inspect(ctx, filepath.Join(vol, "vigil.db"))
	if err != nil || info.Pings != acked+1 {
		t.Fatalf("after a restart: %+v, %v; want %d pings", info, err, acked+1)
	}
}
