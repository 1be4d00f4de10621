package rpc_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/bridgekit/bridgekit/runtime/jsonrpc"
	"github.com/bridgekit/bridgekit/runtime/rpc"
)

// stuckHandler is a slog.Handler that blocks every record until release
// is closed, like a logger writing to a stderr that nobody drains.
type stuckHandler struct {
	release chan struct{}
	entered chan struct{} // closed at the first record
	once    *sync.Once
}

func newStuckHandler() *stuckHandler {
	return &stuckHandler{release: make(chan struct{}), entered: make(chan struct{}), once: new(sync.Once)}
}

func (h *stuckHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *stuckHandler) Handle(context.Context, slog.Record) error {
	h.once.Do(func() { close(h.entered) })
	<-h.release
	return nil
}
func (h *stuckHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *stuckHandler) WithGroup(string) slog.Handler      { return h }

// TestDiagnosticsNeverBlock: with a logger and a frame error callback that
// block forever, a flood of garbage, failing notifications and panics does
// not keep a valid request from being answered.
func TestDiagnosticsNeverBlock(t *testing.T) {
	forTransports(t, func(t *testing.T, tr transport) {
		for _, slots := range []int{1, 4} {
			t.Run(fmt.Sprintf("MaxConcurrentRequests=%d", slots), func(t *testing.T) {
				logs := newStuckHandler()
				stuckCallback := make(chan struct{})
				called := make(chan struct{}, 1)
				defer close(logs.release) // after the peer's Close, for goleak
				defer close(stuckCallback)
				p := tr.rawPeer(t, methods{
					"fail":  func(context.Context, *rpc.Request) (any, error) { return nil, errors.New("failed") },
					"boom":  func(context.Context, *rpc.Request) (any, error) { panic("boom") },
					"valid": func(context.Context, *rpc.Request) (any, error) { return "answered", nil },
				}, &rpc.Options{
					Logger: slog.New(logs),
					OnFrameError: func(*rpc.FrameError) {
						select {
						case called <- struct{}{}:
						default:
						}
						<-stuckCallback
					},
					MaxConcurrentRequests: slots,
				})
				const garbage = 5000
				lines := make([]string, 0, garbage)
				for i := range garbage {
					switch i % 5 {
					case 0:
						lines = append(lines, "not json")
					case 1:
						lines = append(lines, `{"jsonrpc":"2.0","method":"unknown"}`)
					case 2:
						lines = append(lines, `{"jsonrpc":"2.0","method":"fail"}`)
					case 3:
						lines = append(lines, `{"jsonrpc":"2.0","id":99,"result":"stray"}`)
					case 4:
						lines = append(lines, `{"jsonrpc":"2.0","id":"b","method":"boom"}`)
					}
				}
				go func() {
					p.send(strings.Join(lines, "\n"))
					p.send(`{"jsonrpc":"2.0","id":"v","method":"valid"}`)
				}()
				for {
					if l := p.recv(); l == `{"jsonrpc":"2.0","id":"v","result":"answered"}` {
						break
					}
				}
				select {
				case <-logs.entered:
				case <-called:
				default:
					t.Error("no diagnostics were reported")
				}
			})
		}
	})
}

// TestWriteErrorWithStuckLogger: a write error ends the connection even
// when the logger blocks.
func TestWriteErrorWithStuckLogger(t *testing.T) {
	logs := newStuckHandler()
	defer close(logs.release)
	cr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pw.Close()
	pr, cw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	pr.Close()
	c := jsonrpc.NewConn(cr, cw, nil, &rpc.Options{Logger: slog.New(logs)})
	defer c.Close()
	if err := c.Notify(context.Background(), "n", nil); err == nil {
		t.Fatal("Notify on a closed pipe succeeded")
	}
	wait(t, c.Done())
}

// recorder is a slog.Handler that keeps every record's message and
// attributes as text, and tells added (if set) of each.
type recorder struct {
	mu      sync.Mutex
	records []string
	added   chan struct{}
}

func (r *recorder) Enabled(context.Context, slog.Level) bool { return true }
func (r *recorder) Handle(_ context.Context, rec slog.Record) error {
	var b strings.Builder
	b.WriteString(rec.Message)
	rec.Attrs(func(a slog.Attr) bool {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
		return true
	})
	r.mu.Lock()
	r.records = append(r.records, b.String())
	r.mu.Unlock()
	select {
	case r.added <- struct{}{}:
	default:
	}
	return nil
}
func (r *recorder) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *recorder) WithGroup(string) slog.Handler      { return r }

func (r *recorder) all() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.records...)
}

// TestDiagnosticsTruncated: a 10 MiB id, method or member name in a bad
// line never makes a log record or a FrameError field longer than a few
// hundred bytes.
func TestDiagnosticsTruncated(t *testing.T) {
	forTransports(t, func(t *testing.T, tr transport) {
		const limit = 1 << 10
		huge := strings.Repeat("x", 10<<20)
		rec := recorder{added: make(chan struct{}, 64)}
		p := tr.rawPeer(t, nil, &rpc.Options{Logger: slog.New(&rec)})
		bad := []string{
			`{"jsonrpc":"1.0","id":"` + huge + `","method":"m"}`,         // invalid, with the id echoed
			`{"jsonrpc":"2.0","id":"` + huge + `"}`,                      // neither request nor response
			`{"jsonrpc":"1.0","id":1,"method":"` + huge + `"}`,           // invalid, with a huge method
			`{"jsonrpc":"2.0","id":1,"` + huge + `":1,"` + huge + `":2}`, // duplicate huge member names
			`{"jsonrpc":"2.0","id":1,"` + huge + `":tru}`,                // syntax error in a huge member
			`{"jsonrpc":"2.0","id":"` + huge + `","result":1}`,           // unknown response
			`{"jsonrpc":"2.0","id":"` + huge + `","error":{"code":"x"}}`, // malformed error object
			`{"jsonrpc":"2.0","method":"` + huge + `"}`,                  // unknown notification
			`{"jsonrpc":"2.0","id":2,"method":"` + huge + `"}`,           // unknown method
		}
		for _, l := range bad {
			p.send(l)
		}
		p.send(`{"jsonrpc":"2.0","id":"end","method":"x"}`)
		for {
			l := p.recv()
			if strings.HasPrefix(l, `{"jsonrpc":"2.0","id":2,`) && len(l) > limit {
				t.Errorf("reply of %d bytes to an unknown method", len(l))
			}
			if strings.HasPrefix(l, `{"jsonrpc":"2.0","id":"end"`) {
				break
			}
		}
		for i := range 7 {
			fe := p.frameError()
			for name, s := range map[string]string{"Snippet": fe.Snippet, "ID": fe.ID.String(), "Err": fe.Err.Error(), "Error()": fe.Error()} {
				if len(s) > limit {
					t.Errorf("frame error %d (%v): %s of %d bytes", i, fe.Kind, name, len(s))
				}
			}
			if fe.Reply != nil && len(fe.Reply.Message) > limit {
				t.Errorf("frame error %d: reply message of %d bytes", i, len(fe.Reply.Message))
			}
		}
		for range 8 {
			wait(t, rec.added)
		}
		for _, r := range rec.all() {
			if len(r) > 2*limit {
				t.Errorf("log record of %d bytes: %.200s", len(r), r)
			}
		}

	})
}
