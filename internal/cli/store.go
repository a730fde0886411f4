package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/vigil-operator/vigil/internal/store"
)

func newStoreCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "store",
		Short: "Work with the ping store",
	}
	cmd.AddCommand(newStoreMigrateCmd(), newStoreBackupCmd(), newStoreRestoreCmd())
	return cmd
}

// defaultStore is the store the manager and the store commands use unless
// told: $VIGIL_STORE, else the install's embedded file.
func defaultStore() string { return envOr("VIGIL_STORE", "sqlite:/var/lib/vigil/vigil.db") }

func newStoreBackupCmd() *cobra.Command {
	var from, to, dir string
	var keep int
	cmd := &cobra.Command{
		Use:   "backup (--to <file> | --dir <directory> [--keep N])",
		Short: "Write a consistent copy of the live embedded store, without stopping pings",
		Long: `Write a consistent copy of the embedded store (SQLite's VACUUM INTO) while the
manager goes on taking pings: the copy holds everything acknowledged before
it began. It is checked whole before the command succeeds, is readable by
its owner alone (it holds ping bodies), and never overwrites a file.

With --dir, the copy is named vigil-<UTC time>.db and, with --keep, only
the newest N such copies are kept: what the chart's backup CronJob runs.
Run it where the store's volume is mounted (kubectl exec into the manager,
or the CronJob). PostgreSQL is backed up with pg_dump or your operator's
backups. docs/install.md#backups has the steps.`,
		Example: `  kubectl exec -n vigil-system vigil-manager-0 -- /vigil store backup --to /var/lib/vigil/vigil-before-upgrade.db
  vigil store backup --from /var/lib/vigil/vigil.db --dir /backups --keep 7`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if (to == "") == (dir == "") {
				return errors.New("name the copy with --to <file>, or a directory with --dir")
			}
			if keep < 0 || (keep > 0 && dir == "") {
				return errors.New("--keep: a number of copies to keep in --dir")
			}
			if from == "" {
				from = defaultStore()
			}
			return backupStore(cmd.Context(), cmd.OutOrStdout(), storeDSN(from), to, dir, keep, time.Now())
		},
	}
	f := cmd.Flags()
	// No default shown: $VIGIL_STORE may hold a password.
	f.StringVar(&from, "from", "", "the embedded store: its file (a path or sqlite:<path>) (default $VIGIL_STORE, else /var/lib/vigil/vigil.db)")
	f.StringVar(&to, "to", "", "the copy's file (it must not exist)")
	f.StringVar(&dir, "dir", "", "a directory to write the copy into, named vigil-<UTC time>.db")
	f.IntVar(&keep, "keep", 0, "with --dir: keep only the newest N copies there (0: keep all)")
	return cmd
}

// backupPrefix and backupSuffix name the copies backup --dir writes.
const (
	backupPrefix = "vigil-"
	backupStamp  = "20060102T150405Z"
	backupSuffix = ".db"
)

func backupStore(ctx context.Context, out io.Writer, from, to, dir string, keep int, now time.Time) error {
	if dir != "" {
		to = filepath.Join(dir, backupPrefix+now.UTC().Format(backupStamp)+backupSuffix)
	}
	start := time.Now()
	info, err := store.Backup(ctx, from, to)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "backed up %s to %s in %.1f s: %d checks, %d pings, %d bytes, schema %d\n",
		store.Redact(from), to, time.Since(start).Seconds(), info.Checks, info.Pings, info.Bytes, info.Version)
	if keep == 0 {
		return nil
	}
	// Only the copies this command named: a hand-made vigil-before-x.db
	// is neither counted nor removed. The names sort as their times do.
	all, err := filepath.Glob(filepath.Join(dir, backupPrefix+"*"+backupSuffix))
	if err != nil {
		return err
	}
	var old []string
	for _, name := range all {
		stamp := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(name), backupPrefix), backupSuffix)
		if _, err := time.Parse(backupStamp, stamp); err == nil {
			old = append(old, name)
		}
	}
	slices.Sort(old)
	for _, name := range old[:max(len(old)-keep, 0)] {
		if err := os.Remove(name); err != nil {
			return fmt.Errorf("removing an old copy: %w", err)
		}
		fmt.Fprintf(out, "removed %s\n", name)
	}
	return nil
}

func newStoreRestoreCmd() *cobra.Command {
	var from, to string
	cmd := &cobra.Command{
		Use:   "restore --from <backup> [--to <store>]",
		Short: "Put a backup of the embedded store back in place of the store",
		Long: `Put a copy written by 'vigil store backup' in place of the embedded store.
The backup is checked whole first, and one made by a newer vigil (a newer
schema) is refused. Stop the manager first (kubectl scale statefulset
vigil-manager -n vigil-system --replicas=0): a store a manager has open is
refused. The store it replaces is moved aside, with its WAL, to
<store>.before-restore-<UTC time>, never deleted. The manager migrates the
restored store to its schema when it starts.`,
		Example: `  vigil store restore --from /backups/vigil-20261129T030000Z.db --to /var/lib/vigil/vigil.db`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if to == "" {
				to = defaultStore()
			}
			info, aside, err := store.Restore(cmd.Context(), from, storeDSN(to), time.Now())
			if errors.Is(err, store.ErrInUse) {
				return fmt.Errorf("%w: stop the manager first (kubectl scale statefulset vigil-manager -n vigil-system --replicas=0)", err)
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "restored %s to %s: %d checks, %d pings, schema %d\n",
				from, store.Redact(storeDSN(to)), info.Checks, info.Pings, info.Version)
			if aside != "" {
				fmt.Fprintf(cmd.OutOrStdout(), "the store it replaced is in %s\n", aside)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&from, "from", "", "the backup's file")
	f.StringVar(&to, "to", "", "the embedded store to replace: its file (a path or sqlite:<path>) (default $VIGIL_STORE, else /var/lib/vigil/vigil.db)")
	_ = cmd.MarkFlagRequired("from")
	return cmd
}

func newStoreMigrateCmd() *cobra.Command {
	var from, to string
	cmd := &cobra.Command{
		Use:   "migrate --from <sqlite file> --to <postgres URL>",
		Short: "Copy a ping store into a new, empty one, such as the embedded store into PostgreSQL",
		Long: `Copy everything a ping store holds (checks' states, pings and their bodies,
flips, the notification outbox, the change counter) into a new, empty store,
in one transaction: all of it or, when anything fails, nothing. A destination
that already holds checks is refused, so running it twice doubles nothing.

Stop the manager first (kubectl scale statefulset vigil-manager -n vigil-system
--replicas=0): what a store records after the copy began is not copied. An
embedded source is opened for this process alone, so the command refuses a
file a manager still has open, and a manager cannot open it until the copy
ends. Both stores are migrated to this vigil's schema first; use the
manager's version. docs/migrate-to-postgres.md has the steps in a cluster.`,
		Example: `  vigil store migrate --from /var/lib/vigil/vigil.db --to 'postgres://vigil:...@db:5432/vigil?sslmode=verify-full'
  VIGIL_STORE='postgres://...' vigil store migrate --from /var/lib/vigil/vigil.db`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if to == "" {
				to = os.Getenv("VIGIL_STORE")
			}
			return migrateStore(cmd.Context(), cmd.OutOrStdout(), from, to)
		},
	}
	f := cmd.Flags()
	f.StringVar(&from, "from", "", "the store to copy: the embedded store's file (a path or sqlite:<path>), or PostgreSQL (a postgres:// URL or libpq key=value pairs)")
	// No default shown: $VIGIL_STORE holds a password.
	f.StringVar(&to, "to", "", "the new, empty store: PostgreSQL (a postgres:// URL or libpq key=value pairs) or sqlite:<path> (default $VIGIL_STORE)")
	_ = cmd.MarkFlagRequired("from")
	return cmd
}

// migrateStore copies the store from into the store to and says what it
// copied, with passwords hidden.
func migrateStore(ctx context.Context, out io.Writer, from, to string) error {
	if to == "" {
		return errors.New("--to: name the new store (a postgres:// URL), or set $VIGIL_STORE")
	}
	from, to = storeDSN(from), storeDSN(to)
	if from == to {
		return fmt.Errorf("--from and --to are the same store, %s", store.Redact(from))
	}
	if path, ok := strings.CutPrefix(from, "sqlite:"); ok {
		// Open would create a missing file: an empty store, copied.
		if _, err := os.Stat(strings.TrimPrefix(path, "//")); err != nil {
			return fmt.Errorf("--from: %w", err)
		}
	}
	start := time.Now()
	src, err := store.Open(ctx, from, store.Options{Exclusive: true})
	if errors.Is(err, store.ErrInUse) {
		return fmt.Errorf("--from: %w: stop the manager first (kubectl scale statefulset vigil-manager -n vigil-system --replicas=0)", err)
	}
	if err != nil {
		return fmt.Errorf("--from: %w", err)
	}
	defer src.Close()
	dst, err := store.Open(ctx, to, store.Options{})
	if err != nil {
		return fmt.Errorf("--to: %w", err)
	}
	defer dst.Close()
	stats, err := store.Copy(ctx, dst, src)
	if err != nil {
		return fmt.Errorf("copying %s to %s: %w", store.Redact(from), store.Redact(to), err)
	}
	fmt.Fprintf(out, "copied %s to %s in %.1f s: %d checks, %d pings (%d bytes of bodies), %d flips, %d deliveries; change counter %d\n",
		store.Redact(from), store.Redact(to), time.Since(start).Seconds(),
		stats.Checks, stats.Pings, stats.BodyBytes, stats.Flips, stats.Deliveries, stats.Changes)
	return nil
}

// storeDSN is the DSN of a store named by a DSN or by the path of an
// embedded store's file. Anything in a DSN's form (a .pgpass line too,
// which Open refuses) is taken as a DSN: made into a path, it would be
// created as a file and shown, password and all.
func storeDSN(s string) string {
	if store.IsDSN(s) {
		return s
	}
	return "sqlite:" + s
}
