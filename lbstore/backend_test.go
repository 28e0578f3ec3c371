package lbstore

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" driver

	"github.com/sdnlb/sdnlb/internal/pgtest"
)

// The store tests run twice: on SQLite, then on PostgreSQL, each test on a
// fresh database of its own (testDSN). The PostgreSQL pass starts one
// private server for the whole package (initdb into a temporary directory,
// loopback only, a free port) and removes it at the end.
//
// SDNLB_TEST_POSTGRES changes that: "skip" runs the SQLite pass only (for
// developers without PostgreSQL; it is never the default), a postgres://
// URL uses that server instead (a role allowed to create databases).
// Without it, a PostgreSQL that cannot be started fails the run: its
// binaries come from the Debian postgresql package, which scripts/test.sh
// installs.
const postgresEnv = "SDNLB_TEST_POSTGRES"

// testBackend is the dialect of the pass running: "sqlite" or "postgres".
var testBackend = "sqlite"

// testServer is the PostgreSQL server of the postgres pass.
var testServer *pgtest.Server

func TestMain(m *testing.M) {
	os.Exit(runBackends(m))
}

func runBackends(m *testing.M) int {
	flag.Parse()
	code := m.Run()
	if f := flag.Lookup("test.list"); f != nil && f.Value.String() != "" {
		return code
	}
	env := os.Getenv(postgresEnv)
	if env == "skip" {
		fmt.Printf("lbstore: SKIPPED the PostgreSQL pass of the store tests (%s=skip)\n", postgresEnv)
		return code
	}
	var err error
	if testServer, err = pgtest.Start(env); err != nil {
		fmt.Fprintf(os.Stderr, "FAIL lbstore: the PostgreSQL pass of the store tests cannot run: %v\n"+
			"\t(install the Debian postgresql package, as scripts/test.sh does as root, or set %s=skip to run the SQLite pass only)\n",
			err, postgresEnv)
		return 1
	}
	defer testServer.Stop()
	fmt.Printf("lbstore: the store tests again, on PostgreSQL (%s)\n", testServer.Describe)
	testBackend = "postgres"
	start := time.Now()
	pgCode := m.Run()
	fmt.Printf("lbstore: PostgreSQL pass took %v\n", time.Since(start).Round(time.Millisecond))
	if pgCode != 0 {
		fmt.Fprintln(os.Stderr, "FAIL lbstore: the PostgreSQL pass failed (the failures above the line that announced it)")
	}
	return max(code, pgCode)
}

// testDSN returns the DSN of a fresh, empty database for the pass running:
// a file in tb's temporary directory, or a database of its own on the test
// server, dropped when tb ends.
func testDSN(tb testing.TB) string {
	tb.Helper()
	if testBackend == "sqlite" {
		return filepath.Join(tb.TempDir(), "sdnlb.db")
	}
	return testServer.NewDatabase(tb)
}

// skipUnlessBackend skips a test that only means something on one backend.
func skipUnlessBackend(tb testing.TB, backend, why string) {
	tb.Helper()
	if testBackend != backend {
		tb.Skipf("%s only: %s", backend, why)
	}
}
