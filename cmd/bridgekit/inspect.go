package main

import (
	"context"
	"fmt"
	"time"

	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/inspect"
	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/store"
	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/traffic"
)

func init() {
	register(command{name: "inspect", summary: "serve the web inspector over recorded traffic (a store, a trace, a recording, NDJSON)", run: runInspect})
}

const inspectSynopsis = `[--addr ADDR] FILE

Serves the inspector, a web page that shows the sessions of FILE, updating
as a trace grows: a timeline of frames, each frame as a tree, raw and
against its schema, the conversation, initialize summarized as probe
prints it, each method's p50 and p99, a latency waterfall, and a diff
between two sessions under replay's rules (ids and UUIDs that differ
consistently are no difference).

FILE is a session store (trace --store), a trace (trace --out, JSONL
records), a recording ({seq, dir, line} lines) or the protocol's own
stream (NDJSON, one frame a line: a peer's stdout, a tee log). Every frame
of a text file is classified and checked again as it is read, so a trace
edited by hand is judged afresh. Anything else is refused with the reason.
It serves until SIGINT or SIGTERM.

Flags:`

func runInspect(ctx context.Context, env *Env, args []string) int {
	fs := newFlags(env, "inspect", inspectSynopsis)
	addr := fs.String("addr", "127.0.0.1:7878", usageOf("addr", "host:port, loopback only unless --allow-remote"))
	remote := fs.Bool("allow-remote", false, usageOf("allow-remote", "--addr may then name any interface (the inspector shows the traffic, masked, to whoever connects)"))
	if status, stop := parseFlags(fs, args); stop {
		return status
	}
	if fs.NArg() != 1 {
		fmt.Fprintln(env.Stderr, "bridgekit inspect: name one file of recorded traffic")
		fs.Usage()
		return 2
	}
	if err := checkListenAddr(*addr, *remote); err != nil {
		fmt.Fprintf(env.Stderr, "bridgekit inspect: --addr: %v\n", err)
		return 2
	}
	path := fs.Arg(0)
	var src inspect.Source
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// What cannot be read at all, or is no traffic, is said here, before
	// serving.
	format, err := traffic.Sniff(path)
	if err != nil {
		fmt.Fprintf(env.Stderr, "bridgekit inspect: %v\n", err)
		return 1
	}
	if format == traffic.Store {
		db, err := store.Open(ctx, path)
		if err != nil {
			fmt.Fprintf(env.Stderr, "bridgekit inspect: %v\n", err)
			return 1
		}
		defer db.Close()
		src = db
	} else {
		// A trace is followed as it grows; a recording or an NDJSON
		// stream is read as it is. Every frame is classified and checked
		// again as it is read.
		mem := inspect.NewMemory(1 << 30)
		conv := traffic.NewConverter(format, path, "")
		follow := make(chan struct{})
		go func() {
			defer close(follow)
			err := inspect.Follow(ctx, path, mem, 500*time.Millisecond, format == traffic.Trace, conv.Line, func(err error) {
				fmt.Fprintf(env.Stderr, "bridgekit inspect: %s: %v\n", path, err)
			})
			if err != nil {
				fmt.Fprintf(env.Stderr, "bridgekit inspect: %v (serving what was read)\n", err)
			}
			for _, r := range conv.End() {
				mem.Put(r)
			}
		}()
		src = mem
		defer func() { cancel(); <-follow }()
	}
	srv, _, err := listenUI(env, *addr, src, *remote)
	if err != nil {
		fmt.Fprintf(env.Stderr, "bridgekit inspect: %v\n", err)
		return 1
	}
	<-ctx.Done()
	sctx, scancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer scancel()
	srv.Shutdown(sctx)
	return 0
}
