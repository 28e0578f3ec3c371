package main

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"testing"
)

func TestRunner(t *testing.T) {
	t.Run("FatalRunsEveryCleanupInReverse", func(t *testing.T) {
		var log bytes.Buffer
		r, err := newRunner(&log, false)
		if err != nil {
			t.Fatal(err)
		}
		var order []int
		dir := r.TempDir()
		err = r.run(func() {
			r.Cleanup(func() { order = append(order, 1) })
			r.Cleanup(func() { order = append(order, 2); r.Fatal("cleanup fails") })
			r.Cleanup(func() { order = append(order, 3) })
			r.Fatalf("step %d failed", 7)
			t.Error("Fatalf returned")
		})
		if err == nil || !strings.Contains(err.Error(), "step 7 failed") {
			t.Errorf("run: %v, want the Fatalf message", err)
		}
		cerr := r.close()
		if cerr == nil || !strings.Contains(cerr.Error(), "cleanup fails") {
			t.Errorf("close: %v, want the cleanup's error too", cerr)
		}
		if got := order; len(got) != 3 || got[0] != 3 || got[1] != 2 || got[2] != 1 {
			t.Errorf("cleanup order %v, want [3 2 1]", got)
		}
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("temp dir %s not removed: %v", dir, err)
		}
		if !strings.Contains(log.String(), "error: step 7 failed") {
			t.Errorf("log %q without the error", log.String())
		}
	})
	t.Run("Interrupted", func(t *testing.T) {
		r, err := newRunner(&bytes.Buffer{}, false)
		if err != nil {
			t.Fatal(err)
		}
		err = r.run(func() { r.stop(errInterrupted) })
		if !errors.Is(err, errInterrupted) {
			t.Errorf("run: %v, want errInterrupted", err)
		}
		if err := r.close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
}

func TestMain_BadFlags(t *testing.T) {
	var stderr bytes.Buffer
	if code := Main([]string{"--nope"}, nil, &bytes.Buffer{}, &stderr); code != 2 {
		t.Errorf("exit code %d, want 2", code)
	}
	if code := Main([]string{"extra"}, nil, &bytes.Buffer{}, &stderr); code != 2 {
		t.Errorf("exit code %d with an argument, want 2", code)
	}
}
