package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/inspect"
	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/store"
)

func init() {
	register(command{name: "inspect", summary: "serve the web inspector over a session store or a JSONL trace", run: runInspect})
}

const inspectSynopsis = `[--addr ADDR] DB|FILE

Serves the inspector, a web page that shows the sessions of a session
store (written by trace --store) or of a JSONL trace (written by trace
--out), updating as they grow: a timeline of frames, each frame as a tree,
raw and against its schema, a latency waterfall and a diff between two
sessions. A file whose name ends in .jsonl or .ndjson, or that starts with
'{', is read as JSONL; anything else as a store. It serves until SIGINT or
SIGTERM.

Flags:`

func runInspect(ctx context.Context, env *Env, args []string) int {
	fs := newFlags(env, "inspect", inspectSynopsis)
	addr := fs.String("addr", "127.0.0.1:7878", usageOf("addr", "host:port, loopback only unless --allow-remote"))
	remote := fs.Bool("allow-remote", false, usageOf("allow-remote", "--addr may then name any interface (the inspector shows the traffic, masked, to whoever connects)"))
	if status, stop := parseFlags(fs, args); stop {
		return status
	}
	if fs.NArg() != 1 {
		fmt.Fprintln(env.Stderr, "bridgekit inspect: name one store or JSONL trace")
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
	if isJSONL(path) {
		// Follow reads in the background: what cannot be read at all is
		// said here, before serving.
		if err := checkReadable(path); err != nil {
			fmt.Fprintf(env.Stderr, "bridgekit inspect: %v\n", err)
			return 1
		}
		mem := inspect.NewMemory(1 << 30)
		follow := make(chan struct{})
		go func() {
			defer close(follow)
			err := inspect.Follow(ctx, path, mem, 500*time.Millisecond, func(err error) {
				fmt.Fprintf(env.Stderr, "bridgekit inspect: %s: %v\n", path, err)
			})
			if err != nil {
				fmt.Fprintf(env.Stderr, "bridgekit inspect: %v (serving what was read)\n", err)
			}
		}()
		src = mem
		defer func() { cancel(); <-follow }()
	} else {
		if _, err := os.Stat(path); err != nil {
			fmt.Fprintf(env.Stderr, "bridgekit inspect: %v\n", err)
			return 1
		}
		db, err := store.Open(ctx, path)
		if err != nil {
			fmt.Fprintf(env.Stderr, "bridgekit inspect: %v\n", err)
			return 1
		}
		defer db.Close()
		src = db
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

// checkReadable says why path cannot be read as a file, if it cannot.
func checkReadable(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if fi.IsDir() {
		return fmt.Errorf("%s: is a directory", path)
	}
	return nil
}

// isJSONL tells a JSONL trace from a store by its name, else its first byte.
func isJSONL(path string) bool {
	if strings.HasSuffix(path, ".jsonl") || strings.HasSuffix(path, ".ndjson") {
		return true
	}
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	var b [1]byte
	n, _ := f.Read(b[:])
	return n == 1 && b[0] == '{'
}
