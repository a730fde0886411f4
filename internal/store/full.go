package store

import (
	"errors"
	"fmt"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"
)

// A full volume. When the disk under the store fills, a transaction fails
// whole (SQLite and PostgreSQL both roll it back): nothing of it is
// written. Its writes fail with ErrFull, which callers answer with 503 and
// Retry-After, as for a database that does not answer; reads go on. Every
// new write tries again, so writing resumes by itself once space is freed.
// The store says so once when it fills and once when it writes again
// (Options.OnFull), and Full reports it for the metrics.

// ErrFull means the store's volume is full: writes are refused until space
// is freed. It is a kind of ErrUnavailable.
var ErrFull = fmt.Errorf("%w: its volume is full", ErrUnavailable)

// sqliteFull is SQLite's primary result code SQLITE_FULL.
const sqliteFull = 13

// diskFull is PostgreSQL's SQLSTATE disk_full.
const diskFull = "53100"

// isFull reports whether a failed transaction ran out of disk space.
func isFull(err error) bool {
	var code interface{ Code() int }
	if errors.As(err, &code) && code.Code()&0xff == sqliteFull {
		return true
	}
	var pg *pgconn.PgError
	if errors.As(err, &pg) && pg.Code == diskFull {
		return true
	}
	return errors.Is(err, syscall.ENOSPC)
}

// Full reports whether the last write failed for want of space.
func (s *Store) Full() bool { return s.full.Load() }

// noteFull records whether a transaction found the volume full, and says
// so when that changes.
func (s *Store) noteFull(full bool, err error) {
	if !full && !s.full.Load() {
		return // the usual case: a commit while not full
	}
	// PostgreSQL's writers run side by side: the change and what is said
	// of it go together, so the last word is the state.
	s.fullMu.Lock()
	defer s.fullMu.Unlock()
	if s.full.Swap(full) != full && s.opts.OnFull != nil {
		s.opts.OnFull(full, err)
	}
}

// Volume is the space left and the size of the filesystem that holds the
// embedded store's file; ok is false for PostgreSQL, whose disk is its
// server's.
func (s *Store) Volume() (available, size int64, ok bool) {
	if s.path == "" {
		return 0, 0, false
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(s.path, &st); err != nil {
		return 0, 0, false
	}
	return int64(st.Bavail) * st.Bsize, int64(st.Blocks) * st.Bsize, true
}
