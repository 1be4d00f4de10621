// Package host serves the host side of Harn's stdio bridge: the JSON-RPC
// methods a Harn runtime sends to the program that embeds it.
//
// A host is any value implementing some of the handler interfaces of package
// gen/harn: one per method, and one per operation carried inside host/call
// (harn.ProcessListShellsHandler, ...). The server dispatches each call to the
// matching interface, answers -32601 for methods and operations the value does
// not implement, and answers host/capabilities from exactly the operations it
// does implement. shells.Provider is a complete shell-discovery host.
//
//	p, _ := shells.New(shells.Config{})
//	err := host.New(p, nil).Serve(ctx, os.Stdin, os.Stdout)
package host

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"slices"
	"sync"

	"github.com/bridgekit/bridgekit/gen/harn"
	"github.com/bridgekit/bridgekit/runtime/jsonrpc"
)

// DefaultMaxConcurrentRequests is how many bridge requests a Server handles at
// once unless Options.Conn says otherwise: enough that a slow request (a
// permission prompt waiting for a person) does not hold up the others.
const DefaultMaxConcurrentRequests = 8

// Options configures a Server. The zero value is ready to use.
type Options struct {
	// Conn configures the JSON-RPC connection (frame limit, concurrency,
	// logger). MaxConcurrentRequests 0 means DefaultMaxConcurrentRequests.
	Conn jsonrpc.Options
	// Capabilities are advertised by host/capabilities in addition to the
	// operations the handler implements (for operations served through a
	// generic harn.HostCallHandler).
	Capabilities map[string][]string
}

// Server serves one handler value on any number of connections.
type Server struct {
	h    any
	opts Options
}

// New returns a Server for h, which implements any subset of the gen/harn host
// handler interfaces.
func New(h any, opts *Options) *Server {
	s := &Server{h: h}
	if opts != nil {
		s.opts = *opts
	}
	if s.opts.Conn.MaxConcurrentRequests == 0 {
		s.opts.Conn.MaxConcurrentRequests = DefaultMaxConcurrentRequests
	}
	return s
}

// Handle serves one inbound request or notification; it implements jsonrpc.Handler.
func (s *Server) Handle(ctx context.Context, req *jsonrpc.Request) (any, error) {
	if req.Method == harn.MethodHostCapabilities {
		if _, ok := s.h.(harn.HostCapabilitiesHandler); !ok {
			var p harn.HostCapabilitiesParams
			if err := jsonrpc.DecodeParams(req.Params, &p); err != nil {
				return nil, err
			}
			return s.Capabilities(), nil
		}
	}
	return harn.DispatchHost(ctx, s.h, req.Method, req.Params)
}

// Capabilities is the host/capabilities answer: every operation the handler
// implements, grouped by capability, plus Options.Capabilities.
func (s *Server) Capabilities() harn.HostCapabilities {
	ops := map[string][]string{}
	for _, op := range harn.ImplementedHostOperations(s.h) {
		if op.Capability != "" {
			ops[op.Capability] = append(ops[op.Capability], op.Op)
		}
	}
	for c, list := range s.opts.Capabilities {
		for _, op := range list {
			if !slices.Contains(ops[c], op) {
				ops[c] = append(ops[c], op)
			}
		}
	}
	caps := make(harn.HostCapabilities, len(ops))
	for c, list := range ops {
		caps[c] = harn.CapabilityOps{List: list}
	}
	return caps
}

// Connect starts serving on r and w and returns the connection at once, so the
// host can also call the runtime (harn.NewVMClient(conn)) while it serves.
func (s *Server) Connect(r io.Reader, w io.Writer) *jsonrpc.Conn {
	return jsonrpc.NewConn(r, w, s, &s.opts.Conn)
}

// Serve serves on r and w until the peer closes its end (a nil error) or ctx
// ends (ctx's error). Either way the connection is closed before it returns.
func (s *Server) Serve(ctx context.Context, r io.Reader, w io.Writer) error {
	conn := s.Connect(r, w)
	defer conn.Close()
	select {
	case <-conn.Done():
		if err := conn.Err(); err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// ServeCommand starts cmd (typically `harn serve acp`) and serves the bridge
// over its stdin and stdout, the usual topology in which the host starts the
// runtime. The child's stderr goes to cmd.Stderr, or this process's stderr
// when that is nil. It returns when the child exits (with its exit error, if
// any) or when ctx ends (the child is then killed).
func (s *Server) ServeCommand(ctx context.Context, cmd *exec.Cmd) error {
	return s.ServeCommandConn(ctx, cmd, nil)
}

// ServeCommandConn is ServeCommand that also hands the live connection to
// use, for example to send the runtime requests of its own. use runs in its
// own goroutine; ServeCommandConn waits for it before returning. Serving
// goes on after use returns, for as long as the child runs: to end the
// session from use, close the connection (which closes the child's stdin).
func (s *Server) ServeCommandConn(ctx context.Context, cmd *exec.Cmd, use func(*jsonrpc.Conn)) error {
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if cmd.Stderr == nil {
		cmd.Stderr = os.Stderr
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", cmd.Path, err)
	}
	conn := s.Connect(stdout, stdin)
	var wg sync.WaitGroup
	if use != nil {
		wg.Go(func() { use(conn) })
	}
	exited := make(chan error, 1)
	go func() {
		<-conn.Done() // the child closed stdout (normally: it exited)
		exited <- cmd.Wait()
	}()
	var result error
	select {
	case result = <-exited:
	case <-ctx.Done():
		_ = cmd.Process.Kill()
		conn.Close()
		<-exited
		result = ctx.Err()
	}
	conn.Close()
	wg.Wait()
	if result != nil {
		s.logger().Debug("bridge child ended", "path", cmd.Path, "err", result)
	}
	return result
}

func (s *Server) logger() *slog.Logger {
	if s.opts.Conn.Logger != nil {
		return s.opts.Conn.Logger
	}
	return slog.New(slog.DiscardHandler)
}
