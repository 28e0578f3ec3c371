// Package pgtest runs a private PostgreSQL server for tests: initdb into
// a temporary directory, loopback only, a free port, as the postgres user
// when run as root. The store tests and the e2e cluster tests share it.
// Its binaries come from the Debian postgresql package.
package pgtest

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" driver
)

// TB is the part of testing.TB the server needs.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
	Errorf(format string, args ...any)
	Cleanup(func())
}

// Server is a PostgreSQL server for tests: a private one (cmd set) or
// the one SDNLB_TEST_POSTGRES names.
type Server struct {
	base     *url.URL // the server, with the admin database
	admin    *sql.DB
	Describe string // for logs: the server, its address and directory
	dbs      atomic.Int64

	cmd     *exec.Cmd
	dir     string
	exited  <-chan struct{}
	logFile string
}

// Start starts a private server, or with a postgres:// URL uses that
// server instead (a role allowed to create databases).
func Start(env string) (*Server, error) {
	if env != "" {
		if !strings.HasPrefix(env, "postgres://") && !strings.HasPrefix(env, "postgresql://") {
			return nil, fmt.Errorf("%q: want a postgres:// URL", env)
		}
		u, err := url.Parse(env)
		if err != nil {
			return nil, fmt.Errorf("server URL: %w", err)
		}
		s := &Server{base: u, Describe: u.Redacted()}
		if err := s.connect(10 * time.Second); err != nil {
			return nil, err
		}
		return s, nil
	}
	return startPrivate()
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

// startLocked starts cmd and waits for it on a thread locked for the
// child's lifetime, and returns a channel closed when it exits. Pdeathsig
// fires when the creating thread exits, and Go ends a thread when a locked
// goroutine returns (the e2e hosts' namespace workers do), which would
// kill the server in the middle of a test.
func startLocked(cmd *exec.Cmd) (<-chan struct{}, error) {
	started := make(chan error, 1)
	exited := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		_ = cmd.Wait()
		close(exited)
	}()
	return exited, <-started
}

// startPrivate runs initdb and postgres in a temporary directory, as the
// postgres user when run as root (PostgreSQL refuses root), listening on
// 127.0.0.1 only, on a free port. The server dies with the test binary
// even when it crashes (Pdeathsig).
func startPrivate() (_ *Server, err error) {
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
	s := &Server{dir: dir, logFile: filepath.Join(dir, "postgres.log")}
	defer func() {
		if err != nil {
			s.Stop()
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
	if s.exited, err = startLocked(s.cmd); err != nil {
		return nil, fmt.Errorf("start postgres: %w", err)
	}
	s.base = &url.URL{Scheme: "postgres", User: url.User("postgres"), Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), Path: "/postgres"}
	if err := s.connect(30 * time.Second); err != nil {
		return nil, err
	}
	var version string
	if err := s.admin.QueryRow(`SHOW server_version`).Scan(&version); err != nil {
		return nil, err
	}
	s.Describe = fmt.Sprintf("private server %s at %s, %s", version, s.base.Host, dir)
	return s, nil
}

// connect opens the admin connection, waiting for a server that starts.
func (s *Server) connect(wait time.Duration) error {
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

func (s *Server) logTail() string {
	if s.logFile == "" {
		return ""
	}
	b, _ := os.ReadFile(s.logFile)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return "(log: " + strings.Join(lines[max(0, len(lines)-5):], " | ") + ")"
}

// NewDatabase creates an empty database, dropped when tb ends.
func (s *Server) NewDatabase(tb TB) string {
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

// Stop shuts a private server down (fast shutdown, then kill) and removes
// its directory.
func (s *Server) Stop() {
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
