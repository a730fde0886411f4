// Package store is Vigil's ping store: everything observed about checks
// (pings and their bodies, the facts of the state machine, deadlines, flips
// and the notification outbox) in one transactional database, the one
// source of truth for it. Check and Channel objects hold what users want;
// this package holds what happened.
//
// Every write goes through the store's writers (one on SQLite, a few on
// PostgreSQL), each of which commits whatever is queued when it gets to it
// in one transaction (group commit): pings for any checks, each with the
// state transition it causes, the flip and that flip's pending
// deliveries. A caller hears back only once the transaction is durable.
// Reads go straight to the database.
//
// One schema and one SQL dialect serve both backends (migrations/): the
// embedded SQLite file (WAL, synchronous=FULL, one writer) and PostgreSQL
// (postgres.go), which several replicas share.
package store

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
	_ "modernc.org/sqlite" // the embedded backend's driver, "sqlite"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Options tune a store.
type Options struct {
	// MaxQueued bounds the writes waiting for the writer; past it a ping is
	// refused with ErrOverloaded (default 10,000).
	MaxQueued int
	// MaxQueuedBytes bounds the ping bodies waiting for the writer (default
	// 64 MiB).
	MaxQueuedBytes int64
	// MaxBatch bounds the writes one transaction commits (default 1,000).
	MaxBatch int
	// BodyBudget bounds the ping body bytes one check keeps; the oldest
	// bodies are dropped first (default 256 KiB).
	BodyBudget int64
	// RunLimit is how many of its last pings a check keeps the runs of,
	// for its statistics (default DefaultRunLimit).
	RunLimit int
	// FlipLimit bounds the flips and notices one check keeps: past it, the
	// oldest go (those with a notification still pending stay until it is
	// sent). Default DefaultFlipLimit.
	FlipLimit int64
	// Flapping is when a check's flips stop being notified one by one
	// (flapping.go).
	Flapping FlapPolicy
	// OnCommit, when set, is called after each commit with what it did.
	OnCommit func(Committed)
	// OnFull, when set, is called when writes start failing because the
	// store's volume is full (full true, with the error), and when they
	// succeed again (full.go).
	OnFull func(full bool, err error)
	// Now is the clock Open reads an absence by (clock.go): the deadline
	// loop's. Default time.Now.
	Now func() time.Time
	// Exclusive opens an embedded store for this process alone: Open fails
	// with ErrInUse while another process (a running manager) has the file
	// open, and the file stays locked until Close, so that none can open it
	// meanwhile. Reads and writes then share one connection. PostgreSQL
	// ignores it. `vigil store migrate` reads its source so.
	Exclusive bool
}

func (o *Options) defaults() {
	if o.MaxQueued <= 0 {
		o.MaxQueued = 10_000
	}
	if o.MaxQueuedBytes <= 0 {
		o.MaxQueuedBytes = 64 << 20
	}
	if o.MaxBatch <= 0 {
		o.MaxBatch = 1000
	}
	if o.BodyBudget <= 0 {
		o.BodyBudget = 256 << 10
	}
	if o.RunLimit <= 0 {
		o.RunLimit = DefaultRunLimit
	}
	o.Flapping.defaults()
	if o.FlipLimit <= 0 {
		o.FlipLimit = DefaultFlipLimit
	}
	if o.Now == nil {
		o.Now = time.Now
	}
}

func (s *Store) now() time.Time { return s.opts.Now() }

// Committed is what one transaction did, for those who act on it (the
// notifier wakes for new flips, the projection for changed checks, the
// metrics count).
type Committed struct {
	// At is when the transaction committed.
	At time.Time
	// Writes is how many writes it held.
	Writes int
	// Flips are the flips it recorded.
	Flips []CommittedFlip
	// Notices is how many notices (re-alerts, escalations, failures) it
	// queued: like flips, they owe notifications.
	Notices int
}

// CommittedFlip is a flip of the check in Namespace.
type CommittedFlip struct {
	Namespace string
	Flip
}

// ErrOverloaded means the writer's queue is full: answer 503 with
// Retry-After rather than queue without bound.
var ErrOverloaded = errors.New("too many writes waiting for the ping store")

// ErrClosed means the store was closed.
var ErrClosed = errors.New("the ping store is closed")

// ErrInUse means that Open with Options.Exclusive found the embedded
// store's file open in another process.
var ErrInUse = errors.New("the ping store is open in another process")

// Store is an open ping store.
type Store struct {
	opts Options
	d    dialect
	// db is the writer's connection; ro serves reads (the same pool for
	// PostgreSQL).
	db, ro *sql.DB
	path   string // the SQLite file

	stmts     map[string]*sql.Stmt // the writer's prepared statements, read-only once open
	ownerStmt *sql.Stmt            // UUIDOwner's read, prepared for the readers
	due       dueStatements        // the prepared reads of due deliveries

	closing     sync.RWMutex // held for reading while queueing a write
	closed      bool
	ops         chan op
	down        atomic.Pointer[error] // set while the database does not answer
	full        atomic.Bool           // set while writes fail for want of space (full.go)
	fullMu      sync.Mutex            // orders changes of full with OnFull
	commits     atomic.Int64          // transactions committed
	writes      atomic.Int64          // writes they held
	queuedBytes atomic.Int64
	early       earlyUse   // the early pings this store kept and has not recorded (early.go)
	replica     string     // this store's name among the replicas sharing it (early.go)
	owners      ownerCache // UUIDOwner's memory
	mirror      mirror     // ChecksIn's copy of the checks table
	bodies      bodyTotals // each namespace's body bytes (bodies.go)
	// channelSweep is the last Channel number the minute's sweep looked
	// at (channels.go).
	channelSweep atomic.Int64
	clock        clock         // Vigil's absences (clock.go)
	projects     projectLocks  // LockProject's turns in this process
	rowLocks     chan struct{} // LockProject's connections (PostgreSQL)
	stop         chan struct{}
	stopped      chan struct{}
	closeOnce    sync.Once
}

// Open opens (creating and migrating as needed) the store that dsn names:
// "sqlite:<path>" for the embedded SQLite file, or PostgreSQL named by a
// "postgres://" URL or libpq key=value pairs ("host=db user=vigil ..."). It
// starts the writer. Its errors show the DSN only as Redact does.
func Open(ctx context.Context, dsn string, opts Options) (*Store, error) {
	opts.defaults()
	s := &Store{opts: opts, ops: make(chan op, opts.MaxQueued), stop: make(chan struct{}), stopped: make(chan struct{}),
		rowLocks: make(chan struct{}, maxRowLocks), replica: newReplicaID()}
	switch formOf(dsn) {
	case formSQLite:
		if err := s.openSQLite(ctx, strings.TrimPrefix(strings.TrimPrefix(dsn, "sqlite:"), "//")); err != nil {
			return nil, err
		}
	case formURL, formKeywords:
		if err := s.openPostgres(ctx, dsn); err != nil {
			return nil, err
		}
	case formPgpass:
		return nil, fmt.Errorf("--store: %s is a line of a .pgpass file, not a DSN: want a postgres:// URL or key=value pairs "+
			"(the password may stay in the file: PGPASSFILE, or passfile= in the DSN)", Redact(dsn))
	default:
		return nil, fmt.Errorf("--store: want sqlite:<path>, a postgres:// URL or libpq key=value pairs; got %s", Redact(dsn))
	}
	if err := s.migrate(ctx); err != nil {
		_ = s.closeDBs()
		return nil, err
	}
	if err := s.prepare(ctx); err != nil {
		_ = s.closeDBs()
		return nil, err
	}
	if err := s.countBodies(ctx); err != nil {
		_ = s.closeDBs()
		return nil, fmt.Errorf("reading what each namespace's ping bodies hold: %w", err)
	}
	if err := s.openClock(ctx); err != nil {
		_ = s.closeDBs()
		return nil, err
	}
	if s.d.lockRows { // other replicas write too
		go s.recountBodies()
	}
	var writers sync.WaitGroup
	for range s.d.writers {
		writers.Go(s.write)
	}
	go func() {
		writers.Wait()
		close(s.stopped)
	}()
	return s, nil
}

// openSQLite opens the file in WAL mode with synchronous=FULL, so that a
// commit is on disk (fsync) before it returns. One connection writes; a few
// read alongside (WAL lets readers run during a write). Temporary tables
// live in memory: the root filesystem of the manager's pod is read-only.
func (s *Store) openSQLite(ctx context.Context, path string) error {
	if path == "" {
		return errors.New("--store sqlite: needs a file path, such as sqlite:/var/lib/vigil/vigil.db")
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return fmt.Errorf("creating the store's directory: %w", err)
	}
	s.d, s.path = sqliteDialect, path
	pragmas := "_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_pragma=busy_timeout(10000)&_pragma=temp_store(MEMORY)"
	if s.opts.Exclusive {
		// SQLite takes the file's exclusive lock when it first reads it in
		// exclusive locking mode, which must therefore come before the
		// journal mode (the driver runs _journal_mode after every _pragma).
		// It waits a second for a lock another process holds.
		pragmas = "_pragma=locking_mode(EXCLUSIVE)&_journal_mode=WAL&_pragma=synchronous(FULL)&_pragma=busy_timeout(1000)&_pragma=temp_store(MEMORY)"
	}
	var err error
	if s.db, err = sql.Open("sqlite", "file:"+path+"?"+pragmas+"&_txlock=immediate"); err != nil {
		return err
	}
	s.db.SetMaxOpenConns(1)
	s.db.SetConnMaxIdleTime(0)
	if s.opts.Exclusive {
		s.ro = s.db // a second connection would find the file locked
	} else {
		if s.ro, err = sql.Open("sqlite", "file:"+path+"?"+pragmas+"&_pragma=query_only(1)"); err != nil {
			_ = s.db.Close()
			return err
		}
		s.ro.SetMaxOpenConns(4)
	}
	if err := s.db.PingContext(ctx); err != nil {
		_ = s.closeDBs()
		var code interface{ Code() int }
		if s.opts.Exclusive && errors.As(err, &code) && code.Code()&0xff == sqliteBusy {
			return fmt.Errorf("%w: %s", ErrInUse, path)
		}
		return fmt.Errorf("opening the store %s: %w", path, err)
	}
	return nil
}

// sqliteBusy is SQLite's primary result code SQLITE_BUSY: a lock another
// connection holds.
const sqliteBusy = 5

// MigrateTo brings the schema of the database at dsn to version (zero: the
// newest), and no further, and returns a plain connection to it: statements run as
// written, with the backend's own placeholders. It is for tests of what a
// migration does to the data an older version left: they fill the older
// schema through the connection, close it, then Open the store, which
// migrates the rest. The caller closes the connection.
func MigrateTo(ctx context.Context, dsn string, version int64) (*sql.DB, error) {
	s := &Store{}
	switch formOf(dsn) {
	case formSQLite:
		if err := s.openSQLite(ctx, strings.TrimPrefix(strings.TrimPrefix(dsn, "sqlite:"), "//")); err != nil {
			return nil, err
		}
	case formURL, formKeywords:
		if err := s.openPostgres(ctx, dsn); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("--store: want sqlite:<path> or a PostgreSQL DSN; got %s", Redact(dsn))
	}
	if err := s.migrateTo(ctx, version); err != nil {
		_ = s.closeDBs()
		return nil, err
	}
	if s.ro != s.db {
		if err := s.ro.Close(); err != nil {
			_ = s.db.Close()
			return nil, err
		}
	}
	return s.db, nil
}

// migrate brings the schema to the newest version (goose, from the
// embedded migrations/).
func (s *Store) migrate(ctx context.Context) error { return s.migrateTo(ctx, 0) }

// migrateTo brings the schema to version, or to the newest when version is
// zero.
func (s *Store) migrateTo(ctx context.Context, version int64) error {
	fsys, err := fs.Sub(migrations, "migrations")
	if err != nil {
		return err
	}
	opts := []goose.ProviderOption{goose.WithDisableGlobalRegistry(true), goose.WithGoMigrations(goMigrations(s.d)...)}
	if s.d.name == postgresDialect.name {
		// Replicas that start at once migrate one after the other.
		locker, err := lock.NewPostgresSessionLocker()
		if err != nil {
			return err
		}
		opts = append(opts, goose.WithSessionLocker(locker))
	}
	p, err := goose.NewProvider(s.d.goose, s.db, fsys, opts...)
	if err != nil {
		return fmt.Errorf("preparing the store's migrations: %w", err)
	}
	if version > 0 {
		_, err = p.UpTo(ctx, version)
	} else {
		_, err = p.Up(ctx)
	}
	if err != nil {
		return fmt.Errorf("migrating the store: %w", err)
	}
	return nil
}

// goMigrations are the migrations whose SQL differs between the backends,
// numbered among those of migrations/ (which both run as they are).
//
// 8: deliveries.namespace compares byte by byte on PostgreSQL too (the "C"
// collation; SQLite's default, BINARY, does already). The dispatcher takes
// namespaces in turns in Go's string order, and the store finds the next
// namespace's due deliveries by stepping through the deliveries_due index
// in its column's order: with the database's collation (en_US.UTF-8 and
// the like ignore hyphens at first), the two orders differ, and a
// namespace's turn could be skipped or come twice. Changing the column's
// collation rebuilds that index in the new order, so the steps stay index
// seeks; a COLLATE in the statements instead could not use the index.
func goMigrations(d dialect) []*goose.Migration {
	pgOnly := func(stmt string) *goose.GoFunc {
		return &goose.GoFunc{RunTx: func(ctx context.Context, tx *sql.Tx) error {
			if d.name != postgresDialect.name {
				return nil
			}
			_, err := tx.ExecContext(ctx, stmt)
			return err
		}}
	}
	sqliteOnly := func(stmts ...string) *goose.GoFunc {
		return &goose.GoFunc{RunTx: func(ctx context.Context, tx *sql.Tx) error {
			if d.name != sqliteDialect.name {
				return nil
			}
			for _, stmt := range stmts {
				if _, err := tx.ExecContext(ctx, stmt); err != nil {
					return err
				}
			}
			return nil
		}}
	}
	return []*goose.Migration{
		goose.NewGoMigration(8,
			pgOnly(`ALTER TABLE deliveries ALTER COLUMN namespace TYPE TEXT COLLATE "C"`),
			pgOnly(`ALTER TABLE deliveries ALTER COLUMN namespace TYPE TEXT COLLATE "default"`)),
		goose.NewGoMigration(17, sqliteOnly(withoutRowid...), sqliteOnly(withRowid...)),
		goose.NewGoMigration(23, both(channelIDs(d)...), both(channelNames(d)...)),
	}
}

// both runs stmts on either backend: a migration whose statements differ
// between them, built for d.
func both(stmts ...string) *goose.GoFunc {
	return &goose.GoFunc{RunTx: func(ctx context.Context, tx *sql.Tx) error {
		for _, stmt := range stmts {
			if _, err := tx.ExecContext(ctx, stmt); err != nil {
				return err
			}
		}
		return nil
	}}
}

// 23: a delivery names its Channel by a number (channels.id, per namespace
// and name) rather than by its name, which every row held in the table and
// again in each index that keys it (the primary key, the due and the
// queued indexes): on PostgreSQL a row's key is always held twice, in the
// heap and in the index (migration 17 could not help there). The queued
// index keys by the number alone, which implies the namespace. The table
// is copied into one of the new shape on both backends (SQLite cannot
// change a primary key in place; on PostgreSQL a dropped column's bytes
// would stay in the old rows). Channel numbers no delivery names any more
// are deleted by the minute's sweep (channels.go).
func channelIDs(d dialect) []string {
	id := `INTEGER PRIMARY KEY`
	if d.name == postgresDialect.name {
		id = `INTEGER GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY`
	}
	return append([]string{
		`CREATE TABLE channels (
			id        ` + id + `,
			namespace TEXT NOT NULL,
			name      TEXT NOT NULL,
			UNIQUE (namespace, name)
		)`,
		`INSERT INTO channels (namespace, name) SELECT DISTINCT namespace, channel FROM deliveries ORDER BY namespace, channel`,
	}, outboxOf(d, `channel_id INTEGER`, `c.id`, `c.namespace = d.namespace AND c.name = d.channel`, `(channel_id, queued)`)...)
}

// channelNames undoes channelIDs.
func channelNames(d dialect) []string {
	return append(outboxOf(d, `channel TEXT`, `c.name`, `c.id = d.channel_id`, `(namespace, channel, queued)`),
		`DROP TABLE channels`)
}

// outboxOf copies the outbox into a table whose Channel column is channel
// (its name and type), valued from the channels table (c) joined on join,
// with the indexes of its shape.
func outboxOf(d dialect, channel, value, join, queued string) []string {
	ns, rowid := `TEXT NOT NULL`, `WITHOUT ROWID`
	if d.name == postgresDialect.name {
		ns, rowid = `TEXT COLLATE "C" NOT NULL`, ``
	}
	column := strings.Fields(channel)[0]
	return []string{
		`CREATE TABLE deliveries_new (
			check_uid    TEXT NOT NULL,
			flip_n       BIGINT NOT NULL,
			` + channel + ` NOT NULL,
			state        TEXT NOT NULL,
			attempts     INTEGER NOT NULL DEFAULT 0,
			next_attempt BIGINT NOT NULL,
			last_error   TEXT NOT NULL DEFAULT '',
			namespace    ` + ns + ` DEFAULT '',
			queued       BIGINT,
			PRIMARY KEY (check_uid, flip_n, ` + column + `)
		) ` + rowid,
		`INSERT INTO deliveries_new (check_uid, flip_n, ` + column + `, state, attempts, next_attempt, last_error, namespace, queued)
			SELECT d.check_uid, d.flip_n, ` + value + `, d.state, d.attempts, d.next_attempt, d.last_error, d.namespace, d.queued
			FROM deliveries d JOIN channels c ON ` + join,
		`DROP TABLE deliveries`,
		`ALTER TABLE deliveries_new RENAME TO deliveries`,
		`CREATE INDEX deliveries_pending ON deliveries (next_attempt) WHERE state = 'pending'`,
		`CREATE INDEX deliveries_due ON deliveries (namespace, next_attempt, check_uid, flip_n, ` + column + `) WHERE state = 'pending'`,
		`CREATE INDEX deliveries_queued ON deliveries ` + queued,
	}
}

// 17: on SQLite, the outbox (deliveries) and the flips are kept in their
// primary key's order (WITHOUT ROWID) rather than in a rowid table beside
// an index of the key: a row then holds its check's UID, its number and
// its Channel's name once, not twice. Their rows are small (a tenth of a
// page at most), which is where SQLite recommends it; the pings, whose
// bodies make rows large, stay as they are. PostgreSQL keeps a table and
// its indexes apart whatever the declaration, so it has nothing to do.
// SQLite cannot change a table's kind in place: each is copied into a new
// table of the same columns.
var withoutRowid = rebuildTables("WITHOUT ROWID")

var withRowid = rebuildTables("")

func rebuildTables(kind string) []string {
	return []string{
		`CREATE TABLE deliveries_new (
			check_uid    TEXT NOT NULL,
			flip_n       BIGINT NOT NULL,
			channel      TEXT NOT NULL,
			state        TEXT NOT NULL,
			attempts     INTEGER NOT NULL DEFAULT 0,
			next_attempt BIGINT NOT NULL,
			last_error   TEXT NOT NULL DEFAULT '',
			namespace    TEXT NOT NULL DEFAULT '',
			PRIMARY KEY (check_uid, flip_n, channel)
		) ` + kind,
		`INSERT INTO deliveries_new (check_uid, flip_n, channel, state, attempts, next_attempt, last_error, namespace)
			SELECT check_uid, flip_n, channel, state, attempts, next_attempt, last_error, namespace FROM deliveries`,
		`DROP TABLE deliveries`,
		`ALTER TABLE deliveries_new RENAME TO deliveries`,
		`CREATE INDEX deliveries_pending ON deliveries (next_attempt) WHERE state = 'pending'`,
		`CREATE INDEX deliveries_due ON deliveries (namespace, next_attempt, check_uid, flip_n, channel) WHERE state = 'pending'`,
		`CREATE TABLE flips_new (
			check_uid  TEXT NOT NULL,
			n          BIGINT NOT NULL,
			created    BIGINT NOT NULL,
			up         BOOLEAN NOT NULL,
			from_state TEXT NOT NULL,
			to_state   TEXT NOT NULL,
			reason     TEXT NOT NULL DEFAULT '',
			detail     TEXT NOT NULL DEFAULT '',
			notice     TEXT NOT NULL DEFAULT '',
			since      BIGINT,
			held       TEXT NOT NULL DEFAULT '',
			held_until BIGINT,
			PRIMARY KEY (check_uid, n)
		) ` + kind,
		`INSERT INTO flips_new (check_uid, n, created, up, from_state, to_state, reason, detail, notice, since, held, held_until)
			SELECT check_uid, n, created, up, from_state, to_state, reason, detail, notice, since, held, held_until FROM flips`,
		`DROP TABLE flips`,
		`ALTER TABLE flips_new RENAME TO flips`,
		`CREATE INDEX flips_created ON flips (created)`,
	}
}

// Shared reports whether several replicas may share the store: PostgreSQL.
// The embedded store is one replica's.
func (s *Store) Shared() bool { return s.d.name == postgresDialect.name }

// Close stops the writer, failing what is still queued, and closes the
// database.
func (s *Store) Close() error {
	var err error
	s.closeOnce.Do(func() {
		s.closing.Lock()
		s.closed = true
		s.closing.Unlock()
		close(s.stop)
		<-s.stopped
		err = s.closeDBs()
	})
	return err
}

func (s *Store) closeDBs() error {
	errs := []error{s.due.close()}
	if s.ro != nil && s.ro != s.db {
		errs = append(errs, s.ro.Close())
	}
	if s.db != nil {
		errs = append(errs, s.db.Close())
	}
	return errors.Join(errs...)
}

// Size is the store's size in bytes: the database file and its write-ahead
// log, or PostgreSQL's database.
func (s *Store) Size(ctx context.Context) (int64, error) {
	if s.d.name == postgresDialect.name {
		var size int64
		err := s.ro.QueryRowContext(ctx, `SELECT pg_database_size(current_database())`).Scan(&size)
		return size, err
	}
	var pages, pageSize int64
	if err := s.ro.QueryRowContext(ctx, "PRAGMA page_count").Scan(&pages); err != nil {
		return 0, err
	}
	if err := s.ro.QueryRowContext(ctx, "PRAGMA page_size").Scan(&pageSize); err != nil {
		return 0, err
	}
	size := pages * pageSize
	if st, err := os.Stat(s.path + "-wal"); err == nil {
		size += st.Size()
	}
	return size, nil
}

// Stats are counts since the store was opened.
type Stats struct {
	// Commits is how many transactions the writer committed; Writes how
	// many writes (pings, observations, ...) they held.
	Commits, Writes int64
}

// Stats returns the store's counts.
func (s *Store) Stats() Stats {
	return Stats{Commits: s.commits.Load(), Writes: s.writes.Load()}
}

// ErrUnavailable means the database does not answer: the store refuses
// writes at once (answer 503, Retry-After) until it answers again, which it
// checks every second.
var ErrUnavailable = errors.New("the ping store's database does not answer")

// Health is nil while the database answers, and the reason it does not
// otherwise.
func (s *Store) Health() error {
	if p := s.down.Load(); p != nil {
		return *p
	}
	return nil
}

// Unavailable reports whether err, which a read or write of the store
// returned, means that the database does not answer. It asks the database
// when in doubt, and marks the store unavailable if so.
func (s *Store) Unavailable(err error) bool {
	switch {
	case errors.Is(err, ErrUnavailable) || s.Health() != nil:
		return true
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded), s.d.name != postgresDialect.name:
		// The request gave up, not the database; and an SQLite file does
		// not go away (its one writing connection may just be busy).
		return false
	}
	return !s.reachable()
}

// reachable pings the database after a failed transaction; when it does
// not answer, the store is marked unavailable and probed every second until
// it does.
func (s *Store) reachable() bool {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	err := s.db.PingContext(ctx)
	if err == nil {
		return true
	}
	down := fmt.Errorf("%w: %w", ErrUnavailable, err)
	if s.down.Swap(&down) == nil {
		go s.probe()
	}
	return false
}

func (s *Store) probe() {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		err := s.db.PingContext(ctx)
		cancel()
		if err == nil {
			s.down.Store(nil)
			return
		}
	}
}

// micros and fromMicros convert instants to the stored form.
func micros(t time.Time) sql.NullInt64 {
	if t.IsZero() {
		return sql.NullInt64{}
	}
	return sql.NullInt64{Int64: t.UnixMicro(), Valid: true}
}

func fromMicros(v sql.NullInt64) time.Time {
	if !v.Valid {
		return time.Time{}
	}
	return time.UnixMicro(v.Int64).UTC()
}

// Truncate is an instant as the store keeps it: UTC, in microseconds.
func Truncate(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return t.UTC().Truncate(time.Microsecond)
}
