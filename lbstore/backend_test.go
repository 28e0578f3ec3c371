package lbstore

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" driver
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
var testServer *pgServer

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
	if testServer, err = newPGServer(env); err != nil {
		fmt.Fprintf(os.Stderr, "FAIL lbstore: the PostgreSQL pass of the store tests cannot run: %v\n"+
			"\t(install the Debian postgresql package, as scripts/test.sh does as root, or set %s=skip to run the SQLite pass only)\n",
			err, postgresEnv)
		return 1
	}
	defer testServer.stop()
	fmt.Printf("lbstore: the store tests again, on PostgreSQL (%s)\n", testServer.describe)
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
	return testServer.newDatabase(tb)
}

// skipUnlessBackend skips a test that only means something on one backend.
func skipUnlessBackend(tb testing.TB, backend, why string) {
	tb.Helper()
	if testBackend != backend {
		tb.Skipf("%s only: %s", backend, why)
	}
}

// pgServer is a PostgreSQL server for tests: a private one (cmd set) or
// the one SDNLB_TEST_POSTGRES names.
type pgServer struct {
	base     *url.URL // the server, with the admin database
	admin    *sql.DB
	describe string
	dbs      atomic.Int64

	cmd     *exec.Cmd
	dir     string
	exited  chan struct{}
	logFile string
}

func newPGServer(env string) (*pgServer, error) {
	if env != "" {
		if !isPostgresURL(env) {
			return nil, fmt.Errorf("%s=%q: want skip or a postgres:// URL", postgresEnv, env)
		}
		u, err := url.Parse(env)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", postgresEnv, err)
		}
		s := &pgServer{base: u, describe: redactDSN(env)}
		if err := s.connect(10 * time.Second); err != nil {
			return nil, err
		}
		return s, nil
	}
	return startPGServer()
}

// postgresBinary finds a server program: on PATH, else in Debian's
// /usr/lib/postgresql/<version>/bin, the newest version.
func postgresBinary(name string) (string, error) {
	if path, err := exec.LookPath(name); err == nil {
		return path, nil
	}
	found, _ := filepath.Glob(filepath.Join("/usr/lib/postgresql", "*", "bin", name))
	sort.Slice(found, func(i, j int) bool {
		vi, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(found[i]))))
		vj, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(found[j]))))
		return vi > vj
	})
	if len(found) == 0 {
		return "", fmt.Errorf("%s not found on PATH nor in /usr/lib/postgresql/*/bin", name)
	}
	return found[0], nil
}

// startPGServer runs initdb and postgres in a temporary directory, as the
// postgres user when run as root (PostgreSQL refuses root), listening on
// 127.0.0.1 only, on a free port. The server dies with the test binary
// even when it crashes (Pdeathsig).
func startPGServer() (_ *pgServer, err error) {
	initdb, err := postgresBinary("initdb")
	if err != nil {
		return nil, err
	}
	postgres, err := postgresBinary("postgres")
	if err != nil {
		return nil, err
	}
	attr := &syscall.SysProcAttr{Pdeathsig: syscall.SIGQUIT}
	var uid, gid = -1, -1
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			return nil, fmt.Errorf("running as root, the server must run as the postgres user (the postgresql package creates it): %w", err)
		}
		uid, _ = strconv.Atoi(u.Uid)
		gid, _ = strconv.Atoi(u.Gid)
		attr.Credential = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	}
	dir, err := os.MkdirTemp("", "sdnlb-pg-")
	if err != nil {
		return nil, err
	}
	s := &pgServer{dir: dir, logFile: filepath.Join(dir, "postgres.log")}
	defer func() {
		if err != nil {
			s.stop()
		}
	}()
	if uid >= 0 {
		if err := os.Chown(dir, uid, gid); err != nil {
			return nil, err
		}
	}
	data := filepath.Join(dir, "data")
	cmd := exec.Command(initdb, "-D", data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-locale", "--no-sync")
	cmd.SysProcAttr = attr
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("initdb: %w: %s", err, strings.TrimSpace(string(out)))
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	log, err := os.Create(s.logFile)
	if err != nil {
		return nil, err
	}
	defer log.Close()
	s.cmd = exec.Command(postgres, "-D", data, "-h", "127.0.0.1", "-p", strconv.Itoa(port), "-k", dir,
		"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off", "-c", "max_connections=300")
	s.cmd.SysProcAttr = attr
	s.cmd.Stdout, s.cmd.Stderr = log, log
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start postgres: %w", err)
	}
	s.exited = make(chan struct{})
	go func() { s.cmd.Wait(); close(s.exited) }()
	s.base = &url.URL{Scheme: "postgres", User: url.User("postgres"), Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), Path: "/postgres"}
	if err := s.connect(30 * time.Second); err != nil {
		return nil, err
	}
	var version string
	if err := s.admin.QueryRow(`SHOW server_version`).Scan(&version); err != nil {
		return nil, err
	}
	s.describe = fmt.Sprintf("private server %s at %s, %s", version, s.base.Host, dir)
	return s, nil
}

// connect opens the admin connection, waiting for a server that starts.
func (s *pgServer) connect(wait time.Duration) error {
	var err error
	if s.admin, err = sql.Open("pgx", s.base.String()); err != nil {
		return err
	}
	deadline := time.Now().Add(wait)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err = s.admin.PingContext(ctx)
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-s.exited:
			return fmt.Errorf("postgres exited: %s", s.logTail())
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("postgres at %s does not answer after %v: %w %s", s.base.Host, wait, err, s.logTail())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (s *pgServer) logTail() string {
	if s.logFile == "" {
		return ""
	}
	b, _ := os.ReadFile(s.logFile)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return "(log: " + strings.Join(lines[max(0, len(lines)-5):], " | ") + ")"
}

// newDatabase creates an empty database, dropped when tb ends.
func (s *pgServer) newDatabase(tb testing.TB) string {
	tb.Helper()
	name := fmt.Sprintf("sdnlb_test_%d_%d", os.Getpid(), s.dbs.Add(1))
	if _, err := s.admin.Exec(`CREATE DATABASE ` + name); err != nil {
		tb.Fatalf("create test database: %v", err)
	}
	tb.Cleanup(func() {
		if _, err := s.admin.Exec(`DROP DATABASE ` + name + ` WITH (FORCE)`); err != nil {
			tb.Errorf("drop test database: %v", err)
		}
	})
	u := *s.base
	u.Path = "/" + name
	return u.String()
}

// stop shuts a private server down (fast shutdown, then kill) and removes
// its directory.
func (s *pgServer) stop() {
	if s.admin != nil {
		s.admin.Close()
	}
	if s.cmd != nil && s.exited != nil {
		s.cmd.Process.Signal(syscall.SIGINT)
		select {
		case <-s.exited:
		case <-time.After(10 * time.Second):
			s.cmd.Process.Kill()
			<-s.exited
		}
	}
	if s.dir != "" {
		os.RemoveAll(s.dir)
	}
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}
