package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
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
	cmd.AddCommand(newStoreMigrateCmd())
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
