// Command sdnlb-demo shows sdnlb balancing real traffic on this machine. As
// root it brings up a private Open vSwitch bridge (its own ovsdb-server and
// ovs-vswitchd, userspace datapath), three member hosts that each run an HTTP
// server and two client hosts, all in network namespaces; starts sdnlb;
// creates a VIP, a pool, the members and an HTTP monitor through the API;
// sends traffic through the VIP; and stops one member's server to show it go
// DOWN and leave rotation, then brings it back. It prints the dashboard's
// address and the commands to try, and removes everything on Ctrl-C, on
// SIGTERM and on any error.
//
//	go run ./cmd/sdnlb-demo              # interactive: Enter fails srv2 over and back, Ctrl-C ends
//	go run ./cmd/sdnlb-demo --check      # run the scenario once, check it, tear down, exit 0 or 1
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	os.Exit(Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

type config struct {
	sdnlb   string
	apiAddr string
	ofAddr  string
	check   bool
	verbose bool
}

// Main runs the demo and returns the exit code: 0 once torn down after
// Ctrl-C (or after a passing --check), 1 on any failure, 2 on bad flags.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("sdnlb-demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg config
	fs.StringVar(&cfg.sdnlb, "sdnlb", "", "the sdnlb binary to run (default: build ./cmd/sdnlb of this module with go build)")
	fs.StringVar(&cfg.apiAddr, "api-addr", "127.0.0.1:8081", "where sdnlb serves the API and the dashboard (loopback: no token needed)")
	fs.StringVar(&cfg.ofAddr, "openflow-addr", "127.0.0.1:0", "where sdnlb listens for the demo's switch")
	fs.BoolVar(&cfg.check, "check", false, "non-interactive: run the scenario once, check that every member answers and fails over, then tear down")
	fs.BoolVar(&cfg.verbose, "v", false, "also print the test bed's own log lines")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "sdnlb-demo: unexpected arguments %q\n", fs.Args())
		return 2
	}
	if os.Geteuid() != 0 {
		fmt.Fprintln(stderr, "sdnlb-demo: needs root (network namespaces, Open vSwitch); run it as root")
		return 1
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	r, err := newRunner(stderr, cfg.verbose)
	if err != nil {
		fmt.Fprintln(stderr, "sdnlb-demo:", err)
		return 1
	}
	d := &demo{cfg: cfg, r: r, out: stdout, ctx: ctx}
	err = r.run(func() { d.run(stdin) })
	fmt.Fprintln(stdout, "tearing down: sdnlb, the hosts, the bridge and its daemons…")
	if cerr := r.close(); cerr != nil && err == nil {
		err = cerr
	}
	if err != nil {
		if errors.Is(err, errInterrupted) {
			fmt.Fprintln(stdout, "done.")
			return 0
		}
		fmt.Fprintln(stderr, "sdnlb-demo:", err)
		return 1
	}
	fmt.Fprintln(stdout, "done.")
	return 0
}

// waitEnter sends a value on the returned channel for every line read from
// stdin, and closes it at EOF.
func waitEnter(stdin io.Reader) <-chan struct{} {
	ch := make(chan struct{})
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(stdin)
		for sc.Scan() {
			ch <- struct{}{}
		}
	}()
	return ch
}

// since formats how long ago t was, rounded for people.
func since(t time.Time) string {
	return time.Since(t).Round(100 * time.Millisecond).String()
}
