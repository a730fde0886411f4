package testenv

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
)

// StoreEnv names the environment variable that chooses the ping stores
// the whole-manager suites run on: "sqlite" (the default), "postgres", or
// both, in order, separated by a comma. `make test` sets "sqlite,postgres":
// the suites whose TestMain is MainOnEachStore run once on each, the
// others on the first.
const StoreEnv = "VIGIL_TEST_STORE"

// stores are the ping stores a test may run on.
var stores = []string{"sqlite", "postgres"}

// Stores returns the stores $VIGIL_TEST_STORE lists, sqlite when it is
// empty.
func Stores() ([]string, error) {
	v := os.Getenv(StoreEnv)
	if v == "" {
		return []string{"sqlite"}, nil
	}
	var out []string
	for _, s := range strings.Split(v, ",") {
		s = strings.TrimSpace(s)
		if !slices.Contains(stores, s) {
			return nil, fmt.Errorf("testenv: %s=%q: want sqlite, postgres, or both separated by a comma", StoreEnv, v)
		}
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out, nil
}

var (
	sharedPG     *Postgres
	sharedPGErr  error
	sharedPGOnce sync.Once
)

// StoreDSN returns the DSN of a new, empty ping store for a test, on the
// first store $VIGIL_TEST_STORE lists: a SQLite file in dir, or a new
// database on a PostgreSQL server that this test process starts once and
// that stops with it (see StopPostgres).
func StoreDSN(ctx context.Context, dir string) (string, error) {
	list, err := Stores()
	if err != nil {
		return "", err
	}
	if list[0] == "sqlite" {
		return "sqlite:" + filepath.Join(dir, "vigil.db"), nil
	}
	sharedPGOnce.Do(func() { sharedPG, sharedPGErr = StartPostgres(ctx) })
	if sharedPGErr != nil {
		return "", sharedPGErr
	}
	return sharedPG.NewDatabase(ctx)
}

// StopPostgres stops and removes the server StoreDSN started, if any.
func StopPostgres() error {
	if sharedPG == nil {
		return nil
	}
	return sharedPG.Remove()
}
