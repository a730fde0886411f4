package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/vigil-operator/vigil/internal/monitor"
	"github.com/vigil-operator/vigil/internal/store"
	"github.com/vigil-operator/vigil/internal/testenv"
)

// vigil runs the vigil command with args and returns what it printed.
func vigil(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	root := newRoot()
	root.SetArgs(args)
	root.SetOut(&out)
	root.SetErr(&out)
	err := root.ExecuteContext(context.Background())
	return out.String(), err
}

// TestStoreMigrate copies an embedded store into PostgreSQL with `vigil
// store migrate`, the destination from $VIGIL_STORE (a URL) and from
// --to (libpq key=value pairs), and checks what it says, that it never
// shows the password, and its refusals: a second run, a source a manager
// has open, a .pgpass line, a missing file.
func TestStoreMigrate(t *testing.T) {
	ctx := context.Background()
	pg, err := testenv.StartPostgres(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pg.Remove() })
	dsn, err := pg.NewDatabase(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The test server trusts every connection: any password will do.
	const password = "s3cret-pa55"
	dsn = strings.Replace(dsn, "postgres@", "postgres:"+password+"@", 1)

	path := filepath.Join(t.TempDir(), "vigil.db")
	manager, err := store.Open(ctx, "sqlite:"+path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tg := store.Target{UID: "u1", Namespace: "team-a", Name: "backup", Config: monitor.Config{Timeout: time.Hour, Grace: time.Hour}}
	for _, kind := range []monitor.PingKind{monitor.PingStart, monitor.PingFail} {
		if _, err := manager.RecordPing(ctx, tg, store.Ping{Kind: kind, At: time.Now(), Body: []byte("12345")}); err != nil {
			t.Fatal(err)
		}
	}

	t.Setenv("VIGIL_STORE", dsn)
	out, err := vigil(t, "store", "migrate", "--from", path)
	if !errors.Is(err, store.ErrInUse) || !strings.Contains(err.Error(), "stop the manager first") {
		t.Fatalf("copying a store the manager has open: %v\n%s", err, out)
	}
	if err := manager.Close(); err != nil {
		t.Fatal(err)
	}

	out, err = vigil(t, "store", "migrate", "--from", path)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	want := "1 checks, 2 pings (10 bytes of bodies), 1 flips, 0 deliveries"
	if !strings.Contains(out, want) || !strings.Contains(out, "postgres:xxxxx@") || strings.Contains(out, password) {
		t.Errorf("the command said %q, want %q and no password", out, want)
	}
	dst, err := store.Open(ctx, dsn, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	if c, found, err := dst.Check(ctx, tg.UID); err != nil || !found || c.NPings != 2 || c.Facts.State != monitor.StatusDown {
		t.Errorf("the copied check: %+v %v %v", c, found, err)
	}

	out, err = vigil(t, "store", "migrate", "--from", "sqlite:"+path, "--to", dsn)
	if !errors.Is(err, store.ErrNotEmpty) || strings.Contains(err.Error()+out, password) {
		t.Errorf("a second run: %v\n%s", err, out)
	}

	// The destination named by libpq key=value pairs, its password quoted
	// with a space and a quote in it: taken as PostgreSQL, not as a file
	// name, and shown without any of the password.
	kwURL, err := pg.NewDatabase(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := pgx.ParseConfig(kwURL)
	if err != nil {
		t.Fatal(err)
	}
	keywords := fmt.Sprintf(`host=%s port=%d user=%s dbname=%s sslmode=disable password='s3cret pa55\'word'`, cfg.Host, cfg.Port, cfg.User, cfg.Database)
	wd := t.TempDir()
	t.Chdir(wd)
	out, err = vigil(t, "store", "migrate", "--from", path, "--to", keywords)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if shown := strings.Replace(keywords, `'s3cret pa55\'word'`, "xxxxx", 1); !strings.Contains(out, "to "+shown+" in ") {
		t.Errorf("the command said %q, want the DSN shown as %q", out, shown)
	}
	for _, part := range []string{"s3cret", "pa55", "word'"} {
		if strings.Contains(out, part) {
			t.Errorf("the command said %q, showing %q of the password", out, part)
		}
	}
	// A .pgpass line where a DSN goes is refused, unshown, and makes no
	// file of that name.
	out, err = vigil(t, "store", "migrate", "--from", path, "--to", "127.0.0.1:5432:vigil:vigil:s3cret-pa55")
	if err == nil || !strings.Contains(err.Error(), "127.0.0.1:5432:vigil:vigil:xxxxx is a line of a .pgpass file") || strings.Contains(err.Error()+out, "s3cret") {
		t.Errorf("a .pgpass line as --to: %v\n%s", err, out)
	}
	if files, _ := os.ReadDir(wd); len(files) != 0 {
		t.Errorf("the refused runs left %v in the working directory", files)
	}

	if _, err := vigil(t, "store", "migrate", "--from", filepath.Join(t.TempDir(), "missing.db")); err == nil {
		t.Error("a missing --from file was copied")
	}
	if code := Main([]string{"store", "migrate", "--from", path, "--to", dsn}); code == 0 {
		t.Error("vigil store migrate exits 0 after failing")
	}
}

// TestStoreBackupAndRestore: `vigil store backup --dir --keep` names its
// copies by time and keeps the newest; `vigil store restore` puts one back
// and says where the store it replaced went; bad flags are refused.
func TestStoreBackupAndRestore(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "vigil.db")
	s, err := store.Open(ctx, "sqlite:"+path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tg := store.Target{UID: "u1", Namespace: "team-a", Name: "backup", Config: monitor.Config{Timeout: time.Hour, Grace: time.Hour}}
	if _, err := s.RecordPing(ctx, tg, store.Ping{Kind: monitor.PingSuccess, At: time.Now()}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	handMade := filepath.Join(dir, "vigil-before-upgrade.db")
	if err := os.WriteFile(handMade, []byte("kept"), 0o600); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		at := time.Date(2026, 11, 29, 3, i, 0, 0, time.UTC)
		var out bytes.Buffer
		if err := backupStore(ctx, &out, "sqlite:"+path, "", dir, 2, at); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out.String(), "1 checks, 1 pings") {
			t.Fatalf("backup %d said %q", i, out.String())
		}
	}
	copies, _ := filepath.Glob(filepath.Join(dir, "*"))
	want := []string{filepath.Join(dir, "vigil-20261129T030100Z.db"), filepath.Join(dir, "vigil-20261129T030200Z.db"), handMade}
	if fmt.Sprint(copies) != fmt.Sprint(want) {
		t.Fatalf("copies %v, want the newest two %v", copies, want)
	}
	for _, bad := range [][]string{
		{"store", "backup", "--from", path},
		{"store", "backup", "--from", path, "--to", filepath.Join(dir, "x.db"), "--dir", dir},
		{"store", "backup", "--from", path, "--to", filepath.Join(dir, "x.db"), "--keep", "2"},
		{"store", "backup", "--from", "postgres://db/vigil", "--to", filepath.Join(dir, "x.db")},
	} {
		if out, err := vigil(t, bad...); err == nil {
			t.Errorf("vigil %v succeeded: %s", bad, out)
		}
	}
	if out, err := vigil(t, "store", "restore", "--from", want[1], "--to", path); !errors.Is(err, store.ErrInUse) || !strings.Contains(err.Error(), "stop the manager first") {
		t.Fatalf("restore over a store in use: %v (%s)", err, out)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	out, err := vigil(t, "store", "restore", "--from", want[1], "--to", path)
	if err != nil || !strings.Contains(out, "1 checks, 1 pings") || !strings.Contains(out, "the store it replaced is in "+path+".before-restore-") {
		t.Fatalf("restore: %v, said %q", err, out)
	}
}
