package rpc_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bridgekit/bridgekit/internal/testio"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/bridgekit/bridgekit/runtime/frame"
	"github.com/bridgekit/bridgekit/runtime/jsonrpc"
	"github.com/bridgekit/bridgekit/runtime/ndjson"
	"github.com/bridgekit/bridgekit/runtime/rpc"
)

// timeout bounds every wait of the tests that are not about timing.
const timeout = 10 * time.Second

// rawPeer is the far end of a Conn under test; it speaks raw lines.
type rawPeer struct {
	t         testing.TB
	c         *rpc.Conn
	w         io.WriteCloser // into the Conn: closing it ends the Conn's input
	lines     chan string    // frames written by the Conn
	frameErrs chan *rpc.FrameError
}

func ioPipe() (io.ReadCloser, io.WriteCloser, error) {
	r, w := io.Pipe()
	return r, w, nil
}

func osPipe() (io.ReadCloser, io.WriteCloser, error) { return os.Pipe() }

// transport is a way to connect a Conn under test: the runtime suite runs over each of transports.
type transport struct {
	name string
	// conn starts a JSON-RPC Conn on one end of a new connection and returns the far end: w takes lines
	// for the Conn (closing it ends the Conn's input), r reads the frames the Conn writes, and stop
	// closes what is left of the far end.
	conn func(h rpc.Handler, opts *rpc.Options) (c *rpc.Conn, w io.WriteCloser, r frame.Reader, stop func())
	// conns starts two JSON-RPC Conns back to back.
	conns func(ha rpc.Handler, oa *rpc.Options, hb rpc.Handler, ob *rpc.Options) (a, b *rpc.Conn)
}

// The transports of the suite: NDJSON over io.Pipe streams (what NewConn builds) and the in-memory pair
// (frame.Pipe). pipeKinds adds NDJSON over OS pipes, for the tests that need the kernel's buffering.
var (
	ndjsonPipes = ndjsonOver("ndjson", ioPipe)
	transports  = []transport{ndjsonPipes, {"pipe", framePipeConn, framePipeConns}}
	ndjsonOS    = ndjsonOver("ndjson-os", osPipe)
	pipeKinds   = append(transports, ndjsonOS)
)

// forTransports runs f as a subtest for each transport of the suite.
func forTransports(t *testing.T, f func(t *testing.T, tr transport)) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) { f(t, tr) })
	}
}

// ndjsonOver is NDJSON (rpc.NewConn) over the streams pipe makes.
func ndjsonOver(name string, pipe func() (io.ReadCloser, io.WriteCloser, error)) transport {
	streams := func() (ar io.ReadCloser, aw io.WriteCloser, br io.ReadCloser, bw io.WriteCloser) {
		ar, bw, err := pipe()
		if err != nil {
			panic(err)
		}
		br, aw, err = pipe()
		if err != nil {
			panic(err)
		}
		return ar, aw, br, bw
	}
	return transport{
		name: name,
		conn: func(h rpc.Handler, opts *rpc.Options) (*rpc.Conn, io.WriteCloser, frame.Reader, func()) {
			cr, cw, pr, pw := streams()
			return jsonrpc.NewConn(cr, cw, h, opts), pw, ndjson.NewReader(pr, 64<<20), func() { pr.Close() }
		},
		conns: func(ha rpc.Handler, oa *rpc.Options, hb rpc.Handler, ob *rpc.Options) (*rpc.Conn, *rpc.Conn) {
			ar, aw, br, bw := streams()
			return jsonrpc.NewConn(ar, aw, ha, oa), jsonrpc.NewConn(br, bw, hb, ob)
		},
	}
}

func framePipeConn(h rpc.Handler, opts *rpc.Options) (*rpc.Conn, io.WriteCloser, frame.Reader, func()) {
	a, b := frame.Pipe()
	return jsonrpc.NewTransportConn(a, h, opts), &lineWriter{p: b}, b, func() { b.Close() }
}

func framePipeConns(ha rpc.Handler, oa *rpc.Options, hb rpc.Handler, ob *rpc.Options) (*rpc.Conn, *rpc.Conn) {
	a, b := frame.Pipe()
	return jsonrpc.NewTransportConn(a, ha, oa), jsonrpc.NewTransportConn(b, hb, ob)
}

// lineWriter writes each line written to it (without its "\n" or "\r\n") as a frame to p, skipping blank
// lines, as the NDJSON transport reads them; Close writes an unterminated last line and ends p's writes.
type lineWriter struct {
	mu  sync.Mutex
	p   *frame.PipeEnd
	buf []byte
}

func (w *lineWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, b...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			return len(b), nil
		}
		err := w.frame(w.buf[:i])
		w.buf = w.buf[i+1:]
		if err != nil {
			return 0, err
		}
	}
}

func (w *lineWriter) frame(line []byte) error {
	line = bytes.TrimSuffix(line, []byte("\r"))
	if len(bytes.TrimSpace(line)) == 0 {
		return nil
	}
	return w.p.Write(context.Background(), line)
}

func (w *lineWriter) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	err := w.frame(w.buf)
	w.buf = nil
	return errors.Join(err, w.p.CloseWrite())
}

// rawPeer starts a JSON-RPC Conn with handler h over tr and returns its peer.
func (tr transport) rawPeer(t testing.TB, h rpc.Handler, opts *rpc.Options) *rawPeer {
	t.Helper()
	p := &rawPeer{t: t, lines: make(chan string, 1<<16), frameErrs: make(chan *rpc.FrameError, 1024)}
	var o rpc.Options
	if opts != nil {
		o = *opts
	}
	if o.OnFrameError == nil {
		o.OnFrameError = func(fe *rpc.FrameError) {
			select {
			case p.frameErrs <- fe:
			default:
			}
		}
	}
	c, w, r, stopReading := tr.conn(h, &o)
	p.c, p.w = c, w
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			f, err := r.Read(context.Background())
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
		p.w.Close()
		stopReading()
		<-done
	})
	return p
}

// send writes lines to the Conn.
func (p *rawPeer) send(lines ...string) {
	p.t.Helper()
	for _, l := range lines {
		if _, err := io.WriteString(p.w, l+"\n"); err != nil {
			p.t.Fatalf("send %.100q: %v", l, err)
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
		p.t.Fatalf("Conn wrote\n\t%.300s\nwant\n\t%.300s", got, want)
	}
}

// expectSilence checks that the Conn writes nothing for a short while.
func (p *rawPeer) expectSilence() {
	p.t.Helper()
	select {
	case l := <-p.lines:
		p.t.Fatalf("unexpected frame %.300s", l)
	case <-time.After(50 * time.Millisecond):
	}
}

// frameError returns the next reported frame error.
func (p *rawPeer) frameError() *rpc.FrameError {
	p.t.Helper()
	select {
	case fe := <-p.frameErrs:
		return fe
	case <-time.After(timeout):
		p.t.Fatal("timed out waiting for a frame error")
		return nil
	}
}

// logSink is where a test's slog handler writes: it keeps the log and hands each record, as written, to
// the test.
type logSink struct {
	syncBuffer
	records chan string
}

func newLogSink() *logSink { return &logSink{records: make(chan string, 1<<12)} }

func (s *logSink) Write(p []byte) (int, error) {
	s.syncBuffer.Write(p)
	select {
	case s.records <- string(p):
	default:
	}
	return len(p), nil
}

// waitFor waits until n more records holding sub have been written.
func (s *logSink) waitFor(t testing.TB, sub string, n int) {
	t.Helper()
	for n > 0 {
		select {
		case r := <-s.records:
			if strings.Contains(r, sub) {
				n--
			}
		case <-time.After(timeout):
			t.Fatalf("timed out waiting for %d more log records with %q; the log:\n%s", n, sub, s.String())
		}
	}
}

// callAsync runs c.Call in a goroutine; the result arrives on the channel.
func callAsync(ctx context.Context, c *rpc.Conn, method string, params, result any) <-chan error {
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
type methods map[string]func(ctx context.Context, req *rpc.Request) (any, error)

func (m methods) Handle(ctx context.Context, req *rpc.Request) (any, error) {
	if f, ok := m[req.Method]; ok {
		return f(ctx, req)
	}
	return nil, rpc.MethodNotFound(req.Method)
}

var okHandler = rpc.HandlerFunc(func(_ context.Context, req *rpc.Request) (any, error) { return req.Method, nil })

// wireReply is what the tests read of a reply.
type wireReply struct {
	ID     jsontext.Value `json:"id"`
	Result jsontext.Value `json:"result"`
	Error  *struct {
		Code    int64          `json:"code"`
		Message string         `json:"message"`
		Data    jsontext.Value `json:"data"`
	} `json:"error"`
}

func parseReply(t testing.TB, line string) wireReply {
	t.Helper()
	var r wireReply
	if err := json.Unmarshal([]byte(line), &r); err != nil {
		t.Fatalf("reply %.300s: %v", line, err)
	}
	return r
}

// pair returns two JSON-RPC Conns wired back to back over tr, closed at the end of the test.
func (tr transport) pair(t testing.TB, ha rpc.Handler, oa *rpc.Options, hb rpc.Handler, ob *rpc.Options) (a, b *rpc.Conn) {
	t.Helper()
	a, b = tr.conns(ha, oa, hb, ob)
	t.Cleanup(func() {
		a.Close()
		b.Close()
	})
	return a, b
}

// clientServer returns a client and a server Conn wired back to back over tr, closed at the end of the
// test.
func (tr transport) clientServer(tb testing.TB, server rpc.Handler, opts *rpc.Options) (client, srv *rpc.Conn) {
	tb.Helper()
	return tr.pair(tb, nil, opts, server, opts)
}

// syncBuffer is a goroutine-safe sink the test reads.
type syncBuffer = testio.Buffer

// blockingReader blocks every Read until release is closed, then reports
// EOF. It is not an io.Closer.
type blockingReader struct{ release chan struct{} }

func (r blockingReader) Read([]byte) (int, error) {
	<-r.release
	return 0, io.EOF
}

// blockingWriter blocks every Write until release is closed, then fails it.
// It is not an io.Closer.
type blockingWriter struct {
	release chan struct{}
	entered chan struct{} // receives a value, if it can, as a Write starts
}

func (w blockingWriter) Write(p []byte) (int, error) {
	select {
	case w.entered <- struct{}{}:
	default:
	}
	<-w.release
	return 0, io.ErrClosedPipe
}

// enteringWriter tells entered, if it can, as a Write starts, then writes to the WriteCloser.
type enteringWriter struct {
	io.WriteCloser
	entered chan struct{}
}

func (e enteringWriter) Write(p []byte) (int, error) {
	select {
	case e.entered <- struct{}{}:
	default:
	}
	return e.WriteCloser.Write(p)
}

// signalReader tells reads, if it can, as each Read starts, then reads from r.
type signalReader struct {
	r     io.Reader
	reads chan struct{}
}

func (s signalReader) Read(p []byte) (int, error) {
	select {
	case s.reads <- struct{}{}:
	default:
	}
	return s.r.Read(p)
}

// gateWriter passes writes to w once open is closed; until then they block. entered, if set, receives a
// value, if it can, as a Write starts.
type gateWriter struct {
	open    chan struct{}
	entered chan struct{}
	w       io.Writer
}

func (g gateWriter) Write(p []byte) (int, error) {
	select {
	case g.entered <- struct{}{}:
	default:
	}
	<-g.open
	return g.w.Write(p)
}

// jsonValue is raw JSON params.
func jsonValue(s string) jsontext.Value { return jsontext.Value(s) }

// newConnOver starts a JSON-RPC Conn with no handler on r and w.
func newConnOver(r io.Reader, w io.Writer, opts *rpc.Options) *rpc.Conn {
	return jsonrpc.NewConn(r, w, nil, opts)
}
