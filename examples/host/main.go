// Command host is a runnable Harn bridge host that serves real shell
// discovery (the process.* operations of host/call) and host/capabilities.
//
// It works in both topologies:
//
//	host                      serve the bridge on this process's stdin/stdout
//	host -- harn serve acp    start the runtime as a child and serve the bridge
//	                          over the child's pipes (its stderr passes through)
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

	"github.com/bridgekit/bridgekit/runtime/jsonrpc"
	"github.com/bridgekit/bridgekit/runtime/ndjson"
	"github.com/bridgekit/bridgekit/servers/host"
	"github.com/bridgekit/bridgekit/servers/host/shells"
)

func main() {
	maxFrame := flag.Int("max-frame", ndjson.DefaultMaxFrame, "largest inbound line in bytes")
	verbose := flag.Bool("v", false, "log diagnostics to stderr")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: host [-max-frame N] [-v] [-- COMMAND ARGS...]")
		flag.PrintDefaults()
	}
	flag.Parse()

	level := slog.LevelWarn
	if *verbose {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))

	provider, err := shells.New(shells.Config{})
	if err != nil {
		log.Error("shell discovery", "err", err)
		os.Exit(1)
	}
	srv := host.New(provider, &host.Options{Conn: jsonrpc.Options{
		MaxFrame: *maxFrame,
		Logger:   log, // bad frames are logged here and answered on the wire
	}})

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	if args := flag.Args(); len(args) > 0 {
		cmd := exec.CommandContext(ctx, args[0], args[1:]...)
		err = srv.ServeCommand(ctx, cmd)
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			os.Exit(exit.ExitCode())
		}
	} else {
		err = srv.Serve(ctx, os.Stdin, os.Stdout)
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		log.Error("bridge", "err", err)
		os.Exit(1)
	}
}
