package store

import (
	"context"
	"database/sql"
	"io/fs"
	"path/filepath"
	"testing"
	"time"

	"github.com/pressly/goose/v3"
)

// TestDeliveriesNamespaceMigration: deliveries pending in a store from
// before deliveries had a namespace get their check's, so a manager that
// upgrades still sends them, namespace by namespace.
func TestDeliveriesNamespaceMigration(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "vigil.db")
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	fsys, err := fs.Sub(migrations, "migrations")
	if err != nil {
		t.Fatal(err)
	}
	p, err := goose.NewProvider(goose.DialectSQLite3, db, fsys, goose.WithDisableGlobalRegistry(true))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.UpTo(ctx, 6); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 25, 3, 0, 0, 0, time.UTC).UnixMicro()
	for _, stmt := range []string{
		`INSERT INTO checks (uid, namespace, name, version) VALUES ('u1', 'team-a', 'backup', 1), ('u2', 'team-b', 'report', 1)`,
		`INSERT INTO flips (check_uid, n, created, up, from_state, to_state) VALUES ('u1', 1, ?, FALSE, 'up', 'down'), ('u2', 1, ?, FALSE, 'up', 'down')`,
		// team-b's is the earlier, and team-b is busy below.
		`INSERT INTO deliveries (check_uid, flip_n, channel, state, next_attempt) VALUES ('u1', 1, 'ops', 'pending', ?), ('u2', 1, 'ops', 'pending', ? - 1)`,
	} {
		if _, err := db.ExecContext(ctx, stmt, at, at); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	s, err := Open(ctx, "sqlite:"+path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	due, err := s.DueDeliveries(ctx, time.UnixMicro(at).Add(time.Hour), DueQuery{Limit: 10, PerNamespace: 1, BusyNamespaces: []string{"team-b"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(due) != 1 || due[0].Namespace != "team-a" || due[0].Name != "backup" || due[0].Channel != "ops" {
		t.Errorf("due after the upgrade = %+v, want team-a's backup to ops", due)
	}
}
