// Command host is a runnable Harn bridge host that serves real shell
// discovery (the process.* operations of host/call) and host/capabilities.
//
// It works in both topologies:
//
//	host                      serve the bridge on this process's stdin/stdout
//	host -- harn serve acp    start the runtime as a child and serve the bridge
//	                          over the child's pipes (its stderr passes through)
//
// It stops on SIGINT, SIGTERM or SIGHUP: at once when serving its own
// stdin/stdout; a child first gets SIGTERM, then SIGKILL after -grace. A
// second signal, or the grace period passing, forces the exit. The exit
// status says why it ended: 0 after the peer ended its input (or the child
// exited cleanly), the child's status (128+n when signal n killed it), 128+n
// after this process got signal n, 1 after an error such as a closed stdout.
//
// Diagnostics go to stderr, never to the protocol stream.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"github.com/bridgekit/bridgekit/gen/harn"
	"github.com/bridgekit/bridgekit/runtime/ndjson"
	"github.com/bridgekit/bridgekit/runtime/rpc"
	"github.com/bridgekit/bridgekit/servers/host"
	"github.com/bridgekit/bridgekit/servers/host/shells"
)

func main() {
	maxFrame := flag.Int("max-frame", ndjson.DefaultMaxFrame, "largest inbound line in bytes")
	grace := flag.Duration("grace", host.DefaultStopGrace, "how long to wait for a clean stop after a signal")
	verbose := flag.Bool("v", false, "log diagnostics to stderr")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: host [-max-frame N] [-grace D] [-v] [-- COMMAND ARGS...]")
		flag.PrintDefaults()
	}
	flag.Parse()
	os.Exit(run(flag.Args(), *maxFrame, *grace, *verbose))
}

func run(args []string, maxFrame int, grace time.Duration, verbose bool) int {
	level := slog.LevelWarn
	if verbose {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))

	provider, err := shells.New(shells.Config{})
	if err != nil {
		log.Error("shell discovery", "err", err)
		return 1
	}
	var h harn.HostHandlers
	provider.Register(&h)
	srv := host.New(&h, &host.Options{
		Conn:      rpc.Options{MaxFrame: maxFrame, Logger: log},
		StopGrace: grace,
	})

	// A write to a closed stdout must fail with EPIPE, and end the session
	// with a message, rather than kill the process without one. (Notify,
	// unlike Ignore, is not inherited by the child.)
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)

	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	got := make(chan os.Signal, 1)
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	go func() {
		sig := <-sigs
		got <- sig
		log.Info("stopping", "signal", sig)
		stop()
		select {
		case sig = <-sigs:
			fmt.Fprintf(os.Stderr, "host: second signal (%v): exiting now\n", sig)
		case <-time.After(grace + time.Second):
			fmt.Fprintf(os.Stderr, "host: did not stop within %v of %v: exiting now\n", grace, sig)
		}
		os.Exit(signalStatus(sig))
	}()

	if len(args) > 0 {
		err = srv.ServeCommand(ctx, exec.Command(args[0], args[1:]...))
	} else {
		err = srv.Serve(ctx, os.Stdin, os.Stdout)
	}
	var exit *host.ExitError
	switch {
	case errors.As(err, &exit):
		fmt.Fprintf(os.Stderr, "host: %v\n", exit)
		return exit.Status()
	case errors.Is(err, context.Canceled):
		return signalStatus(<-got)
	case err != nil:
		fmt.Fprintf(os.Stderr, "host: %v\n", err)
		return 1
	}
	return 0
}

// signalStatus is the conventional exit status after signal sig.
func signalStatus(sig os.Signal) int {
	if s, ok := sig.(syscall.Signal); ok {
		return 128 + int(s)
	}
	return 1
}
