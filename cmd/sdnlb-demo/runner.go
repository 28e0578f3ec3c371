package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
)

// errInterrupted ends the demo when the user asks it to (Ctrl-C, SIGTERM).
var errInterrupted = errors.New("interrupted")

// runner is the demo's testbed.TB: Fatal stops the demo (the bed's calls
// then unwind to run), errors are printed and remembered, and the cleanups
// the bed registers run in reverse order in close, after success, failure
// or Ctrl-C alike.
type runner struct {
	log     io.Writer
	verbose bool
	dir     string

	mu       sync.Mutex
	cleanups []func()
	errs     []string
	ndirs    int
}

// stopRun is the panic value with which Fatal unwinds to run.
type stopRun struct{ err error }

func newRunner(log io.Writer, verbose bool) (*runner, error) {
	dir, err := os.MkdirTemp("", "sdnlb-demo")
	if err != nil {
		return nil, err
	}
	return &runner{log: log, verbose: verbose, dir: dir}, nil
}

// run calls f and returns the error that stopped it, if any: the first
// Fatal, or an Errorf from another goroutine.
func (r *runner) run(f func()) (err error) {
	defer func() {
		if v := recover(); v != nil {
			s, ok := v.(stopRun)
			if !ok {
				panic(v)
			}
			err = s.err
		}
		if err == nil {
			err = r.err()
		}
	}()
	f()
	return nil
}

// close runs the cleanups, last registered first, and removes the temp
// dirs; it returns the errors they reported.
func (r *runner) close() error {
	for {
		r.mu.Lock()
		n := len(r.cleanups)
		if n == 0 {
			r.mu.Unlock()
			break
		}
		f := r.cleanups[n-1]
		r.cleanups = r.cleanups[:n-1]
		r.mu.Unlock()
		r.runCleanup(f)
	}
	if err := os.RemoveAll(r.dir); err != nil {
		r.Errorf("remove %s: %v", r.dir, err)
	}
	return r.err()
}

// runCleanup runs one cleanup; a Fatal inside it ends only that cleanup.
func (r *runner) runCleanup(f func()) {
	defer func() {
		if v := recover(); v != nil {
			if _, ok := v.(stopRun); !ok {
				panic(v)
			}
		}
	}()
	f()
}

func (r *runner) err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.errs) == 0 {
		return nil
	}
	return errors.New(strings.Join(r.errs, "; "))
}

func (r *runner) Cleanup(f func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cleanups = append(r.cleanups, f)
}

func (r *runner) Errorf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	fmt.Fprintln(r.log, "error:", msg)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, msg)
}

func (r *runner) Fatal(args ...any) {
	r.Fatalf("%s", fmt.Sprint(args...))
}

func (r *runner) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	panic(stopRun{err: r.err()})
}

// stop unwinds the demo without an error of its own.
func (r *runner) stop(err error) {
	panic(stopRun{err: err})
}

func (r *runner) Failed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.errs) > 0
}

func (r *runner) Helper() {}

func (r *runner) Logf(format string, args ...any) {
	if r.verbose || r.Failed() {
		fmt.Fprintf(r.log, format+"\n", args...)
	}
}

func (r *runner) Name() string { return "sdnlb-demo" }

func (r *runner) Skip(args ...any) { r.Fatal(args...) }

// TempDir returns a new directory under the demo's own, removed at close.
func (r *runner) TempDir() string {
	r.mu.Lock()
	r.ndirs++
	n := r.ndirs
	r.mu.Unlock()
	dir := fmt.Sprintf("%s/%03d", r.dir, n)
	if err := os.Mkdir(dir, 0o700); err != nil {
		r.Fatalf("temp dir: %v", err)
	}
	return dir
}
