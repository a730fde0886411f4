package testenv

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Postgres is a throw-away PostgreSQL server for tests: a data directory
// made by initdb in a temporary directory, a server on a free loopback port,
// everything removed by Stop. The server binaries come from Debian's
// postgresql package (hack/ensure-packages.sh postgres installs it; `make test` runs
// that first).
type Postgres struct {
	bin  string // the directory of initdb, postgres and pg_ctl
	dir  string // the data directory
	port int
	cred *syscall.Credential // whom the server runs as (never root)
	cmd  *exec.Cmd
	dbs  atomic.Int64
}

// PostgresBin finds the PostgreSQL server binaries: $VIGIL_POSTGRES_BIN, or
// the newest /usr/lib/postgresql/<version>/bin, or initdb on the PATH.
func PostgresBin() (string, error) {
	if dir := os.Getenv("VIGIL_POSTGRES_BIN"); dir != "" {
		return dir, nil
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return versionOf(dirs[i]) < versionOf(dirs[j]) })
	for i := len(dirs) - 1; i >= 0; i-- {
		if fileExists(filepath.Join(dirs[i], "postgres")) {
			return dirs[i], nil
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Dir(real), nil
		}
	}
	return "", errors.New("testenv: no PostgreSQL server binaries (initdb, postgres); run hack/ensure-packages.sh postgres " +
		"(as root it installs Debian's postgresql package; `make test` runs it) or set VIGIL_POSTGRES_BIN")
}

func versionOf(binDir string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return v
}

// StartPostgres initialises and starts a server. As root, it runs as the
// "postgres" user the Debian package creates (PostgreSQL refuses root).
func StartPostgres(ctx context.Context) (*Postgres, error) {
	bin, err := PostgresBin()
	if err != nil {
		return nil, err
	}
	p := &Postgres{bin: bin}
	if p.dir, err = os.MkdirTemp("", "vigil-postgres-"); err != nil {
		return nil, err
	}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			return nil, fmt.Errorf("testenv: PostgreSQL does not run as root and there is no postgres user (Debian's package makes it): %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		p.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chown(p.dir, uid, gid); err != nil {
			return nil, err
		}
	}
	if out, err := p.command(ctx, "initdb", "-D", p.dir, "-U", "postgres", "-A", "trust", "--no-sync", "-E", "UTF8").CombinedOutput(); err != nil {
		_ = os.RemoveAll(p.dir)
		return nil, fmt.Errorf("testenv: initdb: %w: %s", err, out)
	}
	if err := p.Start(ctx); err != nil {
		_ = os.RemoveAll(p.dir)
		return nil, err
	}
	return p, nil
}

func (p *Postgres) command(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, filepath.Join(p.bin, name), args...)
	cmd.Dir = p.dir
	// A server outlives no test process, even one killed by a timeout.
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: p.cred, Pdeathsig: syscall.SIGQUIT}
	return cmd
}

// Start starts the server (again, after Stop or Kill, on the same port and
// data) and waits until it takes connections.
func (p *Postgres) Start(ctx context.Context) error {
	if p.port == 0 {
		addr, err := FreeAddr(ctx)
		if err != nil {
			return err
		}
		_, port, _ := net.SplitHostPort(addr)
		p.port, _ = strconv.Atoi(port)
	}
	// fsync stays on: a commit is durable, as in production.
	p.cmd = p.command(context.WithoutCancel(ctx), "postgres", "-D", p.dir, "-p", strconv.Itoa(p.port), "-k", p.dir,
		"-c", "listen_addresses=127.0.0.1", "-c", "max_connections=200", "-c", "shared_buffers=32MB")
	logf, err := os.OpenFile(p.logPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err == nil {
		p.cmd.Stdout, p.cmd.Stderr = logf, logf
	}
	if err := p.cmd.Start(); err != nil {
		return fmt.Errorf("testenv: starting postgres: %w", err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		conn, err := pgx.Connect(ctx, p.DSN("postgres"))
		if err == nil {
			_ = conn.Close(ctx)
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("testenv: postgres did not take connections within 30 s: %w", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// DSN is the URL of a database on the server.
func (p *Postgres) DSN(database string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", p.port, database)
}

// PostgresDatabase starts a throw-away server for tb, removed when it ends,
// and returns the URL of an empty database on it.
func PostgresDatabase(tb testing.TB) string {
	tb.Helper()
	ctx := context.Background()
	pg, err := StartPostgres(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = pg.Remove() })
	dsn, err := pg.NewDatabase(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	return dsn
}

// NewDatabase creates an empty database and returns its URL.
func (p *Postgres) NewDatabase(ctx context.Context) (string, error) {
	conn, err := pgx.Connect(ctx, p.DSN("postgres"))
	if err != nil {
		return "", err
	}
	defer func() { _ = conn.Close(ctx) }()
	name := fmt.Sprintf("vigil_%d_%d", os.Getpid(), p.dbs.Add(1))
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return "", err
	}
	return p.DSN(name), nil
}

// Stop stops the server (fast shutdown) and waits for it.
func (p *Postgres) Stop() error {
	if p.cmd == nil || p.cmd.Process == nil {
		return nil
	}
	_ = p.cmd.Process.Signal(syscall.SIGINT)
	_ = p.cmd.Wait()
	p.cmd = nil
	return nil
}

// Kill stops the server at once, as a crash does.
func (p *Postgres) Kill() {
	if p.cmd == nil || p.cmd.Process == nil {
		return
	}
	_ = p.cmd.Process.Kill()
	_ = p.cmd.Wait()
	p.cmd = nil
}

// Remove stops the server and deletes its data and log.
func (p *Postgres) Remove() error {
	err := p.Stop()
	_ = os.Remove(p.logPath())
	return errors.Join(err, os.RemoveAll(p.dir))
}

// logPath is the server's log, beside its data directory (which initdb
// wants empty).
func (p *Postgres) logPath() string {
	return filepath.Join(os.TempDir(), filepath.Base(p.dir)+".log")
}
