package jsonrpc

import (
	"context"
	"io"
	"os"
	"testing"
	"time"

	"github.com/bridgekit/bridgekit/runtime/ndjson"
)

const timeout = 10 * time.Second

// rawPeer is the far end of a Conn under test; it speaks raw lines.
type rawPeer struct {
	t         testing.TB
	c         *Conn
	w         io.WriteCloser // into the Conn
	lines     chan string    // frames written by the Conn
	frameErrs chan *FrameError
}

func ioPipe() (io.ReadCloser, io.WriteCloser, error) {
	r, w := io.Pipe()
	return r, w, nil
}

func osPipe() (io.ReadCloser, io.WriteCloser, error) { return os.Pipe() }

// newRawPeer starts a Conn with handler h over io.Pipe and returns its peer.
func newRawPeer(t testing.TB, h Handler, opts *Options) *rawPeer {
	return newRawPeerOver(t, ioPipe, h, opts)
}

func newRawPeerOver(t testing.TB, pipe func() (io.ReadCloser, io.WriteCloser, error), h Handler, opts *Options) *rawPeer {
	t.Helper()
	cr, pw, err := pipe()
	if err != nil {
		t.Fatal(err)
	}
	pr, cw, err := pipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &rawPeer{t: t, w: pw, lines: make(chan string, 1<<16), frameErrs: make(chan *FrameError, 1024)}
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.OnFrameError == nil {
		o.OnFrameError = func(err error) { p.frameErrs <- err.(*FrameError) }
	}
	p.c = NewConn(cr, cw, h, &o)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		r := ndjson.NewReader(pr, 0)
		for {
			f, err := r.ReadFrame()
			if err != nil {
				return
			}
			select {
			case p.lines <- string(f):
			case <-stop:
				return
			}
		}
	}()
	t.Cleanup(func() {
		close(stop)
		p.c.Close()
		pw.Close()
		pr.Close()
		<-done
	})
	return p
}

// send writes lines to the Conn.
func (p *rawPeer) send(lines ...string) {
	p.t.Helper()
	for _, l := range lines {
		if _, err := io.WriteString(p.w, l+"\n"); err != nil {
			p.t.Fatalf("send %q: %v", l, err)
		}
	}
}

// recv returns the next frame written by the Conn.
func (p *rawPeer) recv() string {
	p.t.Helper()
	select {
	case l := <-p.lines:
		return l
	case <-time.After(timeout):
		p.t.Fatal("timed out waiting for a frame from the Conn")
		return ""
	}
}

// expect receives the next frame and compares it with want.
func (p *rawPeer) expect(want string) {
	p.t.Helper()
	if got := p.recv(); got != want {
		p.t.Fatalf("Conn wrote\n\t%s\nwant\n\t%s", got, want)
	}
}

// expectSilence checks that the Conn writes nothing for a short while.
func (p *rawPeer) expectSilence() {
	p.t.Helper()
	select {
	case l := <-p.lines:
		p.t.Fatalf("unexpected frame %s", l)
	case <-time.After(50 * time.Millisecond):
	}
}

// frameError returns the next reported frame error.
func (p *rawPeer) frameError() *FrameError {
	p.t.Helper()
	select {
	case fe := <-p.frameErrs:
		return fe
	case <-time.After(timeout):
		p.t.Fatal("timed out waiting for a frame error")
		return nil
	}
}

// waitUntil polls cond until it holds, failing with what() after timeout.
func waitUntil(t testing.TB, cond func() bool, what func() string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal(what())
		}
		time.Sleep(time.Millisecond)
	}
}

// callAsync runs c.Call in a goroutine; the result arrives on the channel.
func callAsync(ctx context.Context, c *Conn, method string, params, result any) <-chan error {
	ch := make(chan error, 1)
	go func() { ch <- c.Call(ctx, method, params, result) }()
	return ch
}

// wait returns the value sent on ch, failing the test after a timeout.
func wait[T any](t testing.TB, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(timeout):
		t.Fatal("timed out")
		var zero T
		return zero
	}
}

// methods is a Handler dispatching on the method name.
type methods map[string]func(ctx context.Context, req *Request) (any, error)

func (m methods) Handle(ctx context.Context, req *Request) (any, error) {
	if f, ok := m[req.Method]; ok {
		return f(ctx, req)
	}
	return nil, &Error{Code: CodeMethodNotFound, Message: "method not found: " + req.Method}
}
