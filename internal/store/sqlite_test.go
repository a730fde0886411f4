package store_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/vigil-operator/vigil/internal/monitor"
	"github.com/vigil-operator/vigil/internal/store"
	"github.com/vigil-operator/vigil/internal/store/storetest"
)

func TestSQLiteContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) string { return "sqlite:" + filepath.Join(t.TempDir(), "vigil.db") })
}

// TestSQLiteReopen: what was acknowledged is there after a restart.
func TestSQLiteReopen(t *testing.T) {
	ctx := context.Background()
	dsn := "sqlite:" + filepath.Join(t.TempDir(), "vigil.db")
	s, err := store.Open(ctx, dsn, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tg := store.Target{UID: "u1", Namespace: "ns", Name: "c", Config: monitor.Config{Timeout: time.Hour, Grace: time.Hour}}
	if _, err := s.RecordPing(ctx, tg, store.Ping{Kind: monitor.PingFail, At: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.RecordPing(ctx, tg, store.Ping{Kind: monitor.PingSuccess, At: time.Now()}); err == nil {
		t.Error("a closed store took a ping")
	}
	s, err = store.Open(ctx, dsn, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c, found, err := s.Check(ctx, "u1")
	if err != nil || !found || c.NPings != 1 || c.Facts.State != monitor.StatusDown || c.LastFlip == nil {
		t.Fatalf("after reopening: %+v found=%v err=%v", c, found, err)
	}
}

func TestOpenRejectsUnknownStores(t *testing.T) {
	for _, dsn := range []string{"", "mysql://x", "sqlite:"} {
		if _, err := store.Open(context.Background(), dsn, store.Options{}); err == nil {
			t.Errorf("Open(%q) succeeded", dsn)
		}
	}
}
