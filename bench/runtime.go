package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"
)

// Runtime is one JSON-RPC implementation under test. Every runtime is
// symmetric (a connection may call and serve), so a client and a server are
// both made with Open.
type Runtime interface {
	// Name is the name shown in reports, e.g. "acp-go-sdk".
	Name() string
	// Key is the short name used on command lines and in environment
	// variables, e.g. "acp".
	Key() string
	// Open starts a connection that reads the peer's messages from r and
	// writes its own to w. If svc is not nil the connection serves the
	// benchmark methods with it; otherwise inbound requests fail.
	Open(r io.Reader, w io.Writer, svc *Service) Conn
}

// Conn is an open connection of some Runtime.
type Conn interface {
	// Call sends a request and decodes the result into result, which is
	// nil, *PromptResult or *BarrierResult.
	Call(ctx context.Context, method string, params, result any) error
	// Notify sends a notification.
	Notify(ctx context.Context, method string, params any) error
	// Done is closed once the connection has shut down.
	Done() <-chan struct{}
	// Err returns why the connection shut down, as far as the runtime tells.
	Err() error
	// Close shuts the connection down and closes r and w (if they are
	// io.Closers).
	Close() error
}

// Runtimes returns every runtime compared in the report, bridgekit last.
func Runtimes() []Runtime {
	return []Runtime{ACP(), XExp(), Sourcegraph(), Bridgekit()}
}

// Variants returns configurations of bridgekit measured besides the
// compared one in the scenarios marked Sequential.
func Variants() []Runtime {
	return []Runtime{BridgekitSequential()}
}

// References returns the runtimes bridgekit is measured against, outside
// the comparison, in the scenarios marked Reference: Minimal, the lower
// bound for delivering notifications.
func References() []Runtime {
	return []Runtime{Minimal()}
}

// Lookup returns the runtime with the given Key or Name.
func Lookup(name string) (Runtime, error) {
	var keys []string
	for _, rt := range append(append(append(Runtimes(), Variants()...), References()...), agentpmRuntimes()...) {
		if rt.Key() == name || rt.Name() == name {
			return rt, nil
		}
		keys = append(keys, rt.Key())
	}
	sort.Strings(keys)
	return nil, fmt.Errorf("unknown runtime %q (have %s)", name, strings.Join(keys, ", "))
}

// Pair is a client and a server connected back to back in one process.
type Pair struct {
	Client, Server Conn
	closers        []io.Closer
}

// NewPair connects a client to a server serving svc over two io.Pipes.
func NewPair(rt Runtime, svc *Service) *Pair {
	cr, sw := io.Pipe() // server -> client
	sr, cw := io.Pipe() // client -> server
	return &Pair{
		Client:  rt.Open(cr, cw, nil),
		Server:  rt.Open(sr, sw, svc),
		closers: []io.Closer{cr, sw, sr, cw},
	}
}

// Close closes both connections, first forcibly closing the pipes so that
// a runtime blocked in a write cannot hang the benchmark. It waits at most
// timeout for each connection to finish.
func (p *Pair) Close(timeout time.Duration) error {
	for _, c := range p.closers {
		c.Close()
	}
	var errs []error
	for _, c := range []Conn{p.Client, p.Server} {
		if err := closeWithin(c, timeout); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// closeWithin calls c.Close but gives up waiting after timeout.
func closeWithin(c Conn, timeout time.Duration) error {
	done := make(chan struct{})
	go func() {
		c.Close()
		close(done)
	}()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-done:
		return nil
	case <-t.C:
		return fmt.Errorf("Close did not return within %v", timeout)
	}
}

// rwc joins a reader and a writer into an io.ReadWriteCloser for runtimes
// that want one; Close closes both if they can be closed.
type rwc struct {
	io.Reader
	io.Writer
}

func (c rwc) Close() error {
	return closeBoth(c.Reader, c.Writer)
}

func closeBoth(r io.Reader, w io.Writer) error {
	var errs []error
	if c, ok := r.(io.Closer); ok {
		errs = append(errs, c.Close())
	}
	if c, ok := w.(io.Closer); ok {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}
