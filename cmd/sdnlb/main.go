// Command sdnlb runs the load balancer: the REST API, the OpenFlow 1.3
// controller switches connect to, and the health monitors, over one SQLite
// file or a PostgreSQL database. Its client commands (get, describe, drain, undrain, watch,
// apply, diff, completion) talk to a running sdnlb's API; sdnlb agent runs
// on a member and answers an AGENT monitor.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "agent" {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		err := runAgent(ctx, os.Args[2:], os.Stdout, os.Stderr)
		stop()
		if err != nil && !errors.Is(err, errHelp) {
			fmt.Fprintln(os.Stderr, "sdnlb:", err)
			os.Exit(2)
		}
		return
	}
	if args, ok := cliArgs(os.Args[1:]); ok {
		os.Exit(runCLI(args, os.Getenv, os.Stdin, os.Stdout, os.Stderr))
	}
	if err := run(os.Args[1:], os.Getenv, os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, errHelp) {
			fmt.Fprintln(os.Stderr, "sdnlb:", err)
			os.Exit(2)
		}
	}
}

func run(args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "serve" {
		args = args[1:]
	}
	cfg, err := LoadConfig(args, getenv, stdout)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	m := NewMain(cfg, newLogger(cfg, stderr))
	if err := m.Run(ctx); err != nil {
		m.Close()
		return err
	}
	select {
	case <-ctx.Done():
		m.Logger.Info("shutting down")
		return m.Close()
	case err := <-m.Err():
		m.Close()
		return err
	}
}

func newLogger(cfg Config, w io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: cfg.LogLevel}
	if cfg.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}
