// Package cli is what the example providers' main packages share: serving
// a servers/service.Server on this process's stdin and stdout, stopping on
// signals, and an exit status that says why the provider ended.
package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/bridgekit/bridgekit/servers/service"
)

// Logger returns the diagnostics logger of a provider: text on stderr (the
// protocol owns stdout), warnings and errors only unless verbose.
func Logger(verbose bool) *slog.Logger {
	level := slog.LevelWarn
	if verbose {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
}

// Fatal reports a start-up failure on stderr and returns the exit status 2
// (bad configuration) for main to exit with.
func Fatal(name string, err error) int {
	fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
	return 2
}

// Serve serves srv on stdin and stdout until the Harness ends stdin, a
// write fails or a signal (SIGINT, SIGTERM, SIGHUP) arrives; then it calls
// stop (which may be nil), for example to close a database, and returns the
// exit status: 0 after the end of input, 128+n after signal n, 1 after an
// error. A request running when a signal arrives has its context ended; a
// second signal, or a stop that takes longer than grace, exits at once.
func Serve(name string, srv *service.Server, log *slog.Logger, grace time.Duration, stop func()) int {
	// A write to a closed stdout must fail with EPIPE, and end the session
	// with a message, rather than kill the process without one.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	got := make(chan os.Signal, 1)
	go func() {
		sig, ok := <-sigs
		if !ok {
			return
		}
		got <- sig
		log.Info("stopping", "signal", sig)
		cancel()
		select {
		case sig = <-sigs:
			fmt.Fprintf(os.Stderr, "%s: second signal (%v): exiting now\n", name, sig)
		case <-time.After(grace):
			fmt.Fprintf(os.Stderr, "%s: did not stop within %v of %v: exiting now\n", name, grace, sig)
		}
		os.Exit(signalStatus(sig))
	}()

	err := srv.Serve(ctx, os.Stdin, os.Stdout)
	if stop != nil {
		stop()
	}
	switch {
	case errors.Is(err, context.Canceled):
		return signalStatus(<-got)
	case err != nil:
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		return 1
	}
	log.Info("end of input")
	return 0
}

// signalStatus is the conventional exit status after signal sig.
func signalStatus(sig os.Signal) int {
	if s, ok := sig.(syscall.Signal); ok {
		return 128 + int(s)
	}
	return 1
}
