package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
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
// checks the copy whole before it takes dest's name. It needs room for a
// copy as large as the store where dest is.
func Backup(ctx context.Context, dsn, dest string) (BackupInfo, error) {
	path, err := embeddedPath(dsn)
	if err != nil {
		return BackupInfo{}, err
	}
	size, err := storeSize(path)
	if err != nil {
		return BackupInfo{}, fmt.Errorf("the store: %w", err)
	}
	if _, err := os.Stat(dest); err == nil {
		return BackupInfo{}, fmt.Errorf("%s exists: a backup never overwrites a file", dest)
	}
	if free, ok := freeBytes(filepath.Dir(dest)); ok && free < size {
		return BackupInfo{}, fmt.Errorf("%s has %d bytes free, and the copy needs up to %d: write it to another volume", filepath.Dir(dest), free, size)
	}
	partial := dest + ".partial"
	// The source's usual connection, as a reader: it waits for the
	// writer's lock rather than failing.
	if err := vacuumInto(ctx, path, false, partial); err != nil {
		return BackupInfo{}, err
	}
	info, err := Inspect(ctx, partial)
	if err == nil {
		err = publish(partial, dest)
	}
	if err != nil {
		_ = os.Remove(partial)
		return BackupInfo{}, err
	}
	return info, nil
}

// storeSize is the bytes of an embedded store's file and its WAL.
func storeSize(path string) (int64, error) {
	st, err := os.Stat(path)
	if err != nil {
		return 0, err
	}
	size := st.Size()
	if wal, err := os.Stat(path + "-wal"); err == nil {
		size += wal.Size()
	}
	return size, nil
}

// freeBytes is the room left on the filesystem that holds dir.
func freeBytes(dir string) (int64, bool) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, false
	}
	return int64(st.Bavail) * st.Bsize, true
}

// vacuumInto writes the database in the file src, as one read transaction
// sees it (its WAL included), into the new file partial: made first,
// readable by its owner alone (a store holds ping bodies), and on disk
// when it returns. Read-only opens src without writing beside it.
func vacuumInto(ctx context.Context, src string, readOnly bool, partial string) error {
	_ = os.Remove(partial) // a copy that died before
	f, err := os.OpenFile(partial, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_ = f.Close()
	query := "?_pragma=busy_timeout(10000)&_pragma=temp_store(MEMORY)"
	if readOnly {
		query = "?mode=ro&_pragma=temp_store(MEMORY)"
	}
	db, err := sql.Open("sqlite", "file:"+src+query)
	if err != nil {
		_ = os.Remove(partial)
		return err
	}
	defer func() { _ = db.Close() }()
	// SQLite writes into an existing file only when it is empty, as this
	// one is.
	if _, err := db.ExecContext(ctx, `VACUUM INTO ?`, partial); err != nil {
		_ = os.Remove(partial)
		return fmt.Errorf("copying %s into %s: %w", src, partial, err)
	}
	if err := syncFile(partial); err != nil {
		_ = os.Remove(partial)
		return err
	}
	return nil
}

func syncFile(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("syncing %s: %w", path, err)
	}
	return nil
}

// publish gives the finished file partial the name dest, failing if dest
// exists (a link, unlike a rename, never replaces a file), durably.
func publish(partial, dest string) error {
	if err := os.Link(partial, dest); err != nil {
		return err
	}
	if err := os.Remove(partial); err != nil {
		return err
	}
	return syncDir(filepath.Dir(dest))
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer func() { _ = d.Close() }()
	return d.Sync()
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
// manager must be stopped: a store another process holds is refused, and
// the store's exclusive lock is held until the restored file is in place,
// so no manager can open it meanwhile. The store it replaces, if any, is
// moved aside (with its WAL) to the name returned, never deleted, and put
// back if the restore fails half-way. The manager migrates the restored
// store to its schema when it starts.
func Restore(ctx context.Context, src, dsn string, now time.Time) (BackupInfo, string, error) {
	path, err := embeddedPath(dsn)
	if err != nil {
		return BackupInfo{}, "", err
	}
	if _, err := Inspect(ctx, src); err != nil {
		return BackupInfo{}, "", err
	}
	// A copy of src with its WAL, if it has one, folded in.
	partial := path + ".partial"
	if err := vacuumInto(ctx, src, true, partial); err != nil {
		return BackupInfo{}, "", err
	}
	defer func() { _ = os.Remove(partial) }()
	info, err := Inspect(ctx, partial)
	if err != nil {
		return BackupInfo{}, "", err
	}
	if v := SchemaVersion(); info.Version > v {
		return BackupInfo{}, "", fmt.Errorf("%s has schema version %d, newer than this vigil's %d: restore it with the vigil that made it", src, info.Version, v)
	}
	var aside string
	if _, err := os.Stat(path); err == nil {
		// The file's exclusive lock proves no manager has it open, and
		// keeps one from opening it until the restored file is in place.
		lock := &Store{opts: Options{Exclusive: true}}
		if err := lock.openSQLite(ctx, path); err != nil {
			return BackupInfo{}, "", err
		}
		defer func() { _ = lock.closeDBs() }()
		aside = path + ".before-restore-" + now.UTC().Format("20060102T150405Z")
	} else if !errors.Is(err, fs.ErrNotExist) {
		return BackupInfo{}, "", err
	}
	// The old file first, then its WAL and shared memory, which go with
	// it: left behind, SQLite would replay that WAL into the restored
	// file. On a failure, what was moved goes back.
	var moved []string
	undo := func(cause error) (BackupInfo, string, error) {
		for _, suffix := range moved {
			_ = os.Rename(aside+suffix, path+suffix)
		}
		return BackupInfo{}, "", cause
	}
	if aside != "" {
		for _, suffix := range []string{"", "-wal", "-shm"} {
			if err := os.Rename(path+suffix, aside+suffix); err != nil {
				if errors.Is(err, fs.ErrNotExist) && suffix != "" {
					continue
				}
				return undo(fmt.Errorf("moving the store aside: %w", err))
			}
			moved = append(moved, suffix)
		}
	}
	if err := publish(partial, path); err != nil {
		return undo(fmt.Errorf("putting the backup in place: %w", err))
	}
	return info, aside, nil
}
