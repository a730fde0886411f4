package testenv

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
)

// StoreEnv names the environment variable that chooses the ping store the
// whole-manager suites run on: "sqlite" (the default) or "postgres". `make
// test` runs those suites once with each.
const StoreEnv = "VIGIL_TEST_STORE"

var (
	sharedPG     *Postgres
	sharedPGErr  error
	sharedPGOnce sync.Once
)

// StoreDSN returns the DSN of a new, empty ping store for a test: a SQLite
// file in dir, or, when $VIGIL_TEST_STORE is "postgres", a new database on
// a PostgreSQL server that this test process starts once and that stops
// with it (see StopPostgres).
func StoreDSN(ctx context.Context, dir string) (string, error) {
	switch backend := os.Getenv(StoreEnv); backend {
	case "", "sqlite":
		return "sqlite:" + filepath.Join(dir, "vigil.db"), nil
	case "postgres":
		sharedPGOnce.Do(func() { sharedPG, sharedPGErr = StartPostgres(ctx) })
		if sharedPGErr != nil {
			return "", sharedPGErr
		}
		return sharedPG.NewDatabase(ctx)
	default:
		return "", fmt.Errorf("testenv: %s=%q: want sqlite or postgres", StoreEnv, backend)
	}
}

// StopPostgres stops and removes the server StoreDSN started, if any.
func StopPostgres() error {
	if sharedPG == nil {
		return nil
	}
	return sharedPG.Remove()
}
