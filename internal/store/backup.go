package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Backups of the embedded store. SQLite's VACUUM INTO writes the database
// as one read transaction sees it: in WAL mode the manager's writer goes on
// committing pings meanwhile, and the copy holds exactly what had been
// committed when the copy began. The copy is written beside its
// destination and renamed into place once it is on disk, so a backup that
// fails half-way never leaves a file that looks whole. PostgreSQL is
// backed up with its own tools (pg_dump, or the operator's backups).

// BackupInfo is what a backup holds.
type BackupInfo struct {
	// Version is its schema's version (the newest migration applied).
	Version       int64
	Checks, Pings int64
	Bytes         int64
}

// ErrNotEmbedded is a backup or restore of a store that is not the
// embedded one.
var ErrNotEmbedded = errors.New("backup and restore are for the embedded store (sqlite:<path>); back PostgreSQL up with pg_dump or your operator's backups")

// embeddedPath is the file of an embedded store's DSN.
func embeddedPath(dsn string) (string, error) {
	if formOf(dsn) != formSQLite {
		return "", ErrNotEmbedded
	}
	path := strings.TrimPrefix(strings.TrimPrefix(dsn, "sqlite:"), "//")
	if path == "" {
		return "", errors.New("sqlite: needs a file path, such as sqlite:/var/lib/vigil/vigil.db")
	}
	return path, nil
}

// Backup writes a consistent copy of the live embedded store at dsn into
// the new file dest, without stopping the manager that writes to it, and
// checks the copy whole.
func Backup(ctx context.Context, dsn, dest string) (BackupInfo, error) {
	path, err := embeddedPath(dsn)
	if err != nil {
		return BackupInfo{}, err
	}
	if _, err := os.Stat(path); err != nil {
		return BackupInfo{}, fmt.Errorf("the store: %w", err)
	}
	if _, err := os.Stat(dest); err == nil {
		return BackupInfo{}, fmt.Errorf("%s exists: a backup never overwrites a file", dest)
	}
	// The source's usual connection, as a reader: it waits for the
	// writer's lock rather than failing, and never checkpoints the WAL
	// away from under the manager (SQLite does that safely anyway).
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)&_pragma=temp_store(MEMORY)")
	if err != nil {
		return BackupInfo{}, err
	}
	defer func() { _ = db.Close() }()
	partial := dest + ".partial"
	_ = os.Remove(partial) // a backup that died before
	if _, err := db.ExecContext(ctx, `VACUUM INTO ?`, partial); err != nil {
		_ = os.Remove(partial)
		return BackupInfo{}, fmt.Errorf("copying the store into %s: %w", partial, err)
	}
	// A backup holds what the store does, ping bodies too: for its owner
	// alone.
	if err := os.Chmod(partial, 0o600); err != nil {
		_ = os.Remove(partial)
		return BackupInfo{}, err
	}
	if err := syncInto(partial, dest); err != nil {
		_ = os.Remove(partial)
		return BackupInfo{}, err
	}
	return Inspect(ctx, dest)
}

// syncInto puts the file from on disk and renames it to to, durably.
func syncInto(from, to string) error {
	f, err := os.OpenFile(from, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("syncing %s: %w", from, err)
	}
	if err := os.Rename(from, to); err != nil {
		return err
	}
	dir, err := os.Open(filepath.Dir(to))
	if err != nil {
		return err
	}
	defer func() { _ = dir.Close() }()
	return dir.Sync()
}

// Inspect checks an embedded store's file whole (SQLite's integrity check)
// and says what it holds. It opens the file read-only.
func Inspect(ctx context.Context, path string) (BackupInfo, error) {
	st, err := os.Stat(path)
	if err != nil {
		return BackupInfo{}, err
	}
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro&_pragma=temp_store(MEMORY)")
	if err != nil {
		return BackupInfo{}, err
	}
	defer func() { _ = db.Close() }()
	var check string
	if err := db.QueryRowContext(ctx, `PRAGMA integrity_check(1)`).Scan(&check); err != nil {
		return BackupInfo{}, fmt.Errorf("%s is not a store: %w", path, err)
	}
	if check != "ok" {
		return BackupInfo{}, fmt.Errorf("%s is damaged: %s", path, check)
	}
	info := BackupInfo{Bytes: st.Size()}
	if err := db.QueryRowContext(ctx, `SELECT COALESCE(MAX(version_id), 0) FROM `+gooseTable+` WHERE is_applied`).Scan(&info.Version); err != nil {
		return BackupInfo{}, fmt.Errorf("%s is not a Vigil store: %w", path, err)
	}
	if err := db.QueryRowContext(ctx, `SELECT (SELECT COUNT(*) FROM checks), (SELECT COUNT(*) FROM pings)`).Scan(&info.Checks, &info.Pings); err != nil {
		return BackupInfo{}, fmt.Errorf("%s is not a Vigil store: %w", path, err)
	}
	return info, nil
}

// SchemaVersion is the newest schema this build of Vigil knows.
func SchemaVersion() int64 {
	var newest int64
	_ = fs.WalkDir(migrations, "migrations", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		num, _, _ := strings.Cut(d.Name(), "_")
		if n, err := strconv.ParseInt(num, 10, 64); err == nil && n > newest {
			newest = n
		}
		return nil
	})
	for _, m := range goMigrations(sqliteDialect) {
		newest = max(newest, m.Version)
	}
	return newest
}

// Restore replaces the embedded store at dsn with the backup at src. The
// manager must be stopped: a store another process holds is refused. The
// store it replaces, if any, is moved aside (with its WAL) to the name
// returned, never deleted; the manager migrates the restored store to its
// schema when it starts.
func Restore(ctx context.Context, src, dsn string, now time.Time) (BackupInfo, string, error) {
	path, err := embeddedPath(dsn)
	if err != nil {
		return BackupInfo{}, "", err
	}
	info, err := Inspect(ctx, src)
	if err != nil {
		return BackupInfo{}, "", err
	}
	if v := SchemaVersion(); info.Version > v {
		return BackupInfo{}, "", fmt.Errorf("%s has schema version %d, newer than this vigil's %d: restore it with the vigil that made it", src, info.Version, v)
	}
	var aside string
	if _, err := os.Stat(path); err == nil {
		// Taking the file's exclusive lock proves no manager has it open.
		s := &Store{opts: Options{Exclusive: true}}
		if err := s.openSQLite(ctx, path); err != nil {
			return BackupInfo{}, "", err
		}
		if err := s.closeDBs(); err != nil {
			return BackupInfo{}, "", err
		}
		aside = path + ".before-restore-" + now.UTC().Format("20060102T150405Z")
	} else if !errors.Is(err, fs.ErrNotExist) {
		return BackupInfo{}, "", err
	}
	partial := path + ".partial"
	if err := copyFile(src, partial); err != nil {
		_ = os.Remove(partial)
		return BackupInfo{}, "", err
	}
	if aside != "" {
		// The old file's WAL and shared memory go with it: left behind,
		// SQLite would replay that WAL into the restored file.
		for _, suffix := range []string{"-wal", "-shm", ""} {
			if err := os.Rename(path+suffix, aside+suffix); err != nil && !errors.Is(err, fs.ErrNotExist) {
				_ = os.Remove(partial)
				return BackupInfo{}, "", fmt.Errorf("moving the store aside: %w", err)
			}
		}
	}
	if err := syncInto(partial, path); err != nil {
		return BackupInfo{}, "", err
	}
	return info, aside, nil
}

// copyFile copies the file from into the new file to.
func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer func() { _ = in.Close() }()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		_ = out.Close()
		return err
	}
	return out.Close()
}
