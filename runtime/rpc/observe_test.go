package rpc_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bridgekit/bridgekit/runtime/jsonrpc"
	"github.com/bridgekit/bridgekit/runtime/ndjson"
	"github.com/bridgekit/bridgekit/runtime/redact"
	"github.com/bridgekit/bridgekit/runtime/rpc"
)

// trafficLog is an Options.Observe that keeps what it sees, per direction.
type trafficLog struct {
	mu      sync.Mutex
	in, out []string
	sizes   []int // of the frames in
	last    [3]time.Time
	badTime bool
}

func (r *trafficLog) observe(t rpc.Traffic) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if t.Time.Before(r.last[t.Dir]) {
		r.badTime = true
	}
	r.last[t.Dir] = t.Time
	switch t.Dir {
	case rpc.In:
		r.in = append(r.in, string(t.Line))
		r.sizes = append(r.sizes, t.Size)
	case rpc.Out:
		if t.Size != len(t.Line) {
			r.badTime = true
		}
		r.out = append(r.out, string(t.Line))
	}
}

// An observer sees every frame of a session exactly once, in the order of
// each direction's stream: requests, notifications handled by the reader
// and queued ones, bad and oversized lines and the errors answering them,
// a stray reply, a handler's own call and the peer's answer, a cancel
// message, and the replies written at the end of input.
func TestObserverSeesEveryFrameOnceInOrder(t *testing.T) {
	for _, slots := range []int{1, 4} {
		t.Run(fmt.Sprint("MaxConcurrentRequests=", slots), func(t *testing.T) {
			rec := &trafficLog{}
			cr, pw := io.Pipe()
			pr, cw := io.Pipe()
			var conn *rpc.Conn
			h := methods{
				"echo": func(_ context.Context, req *rpc.Request) (any, error) { return req.Params, nil },
				"note": func(context.Context, *rpc.Request) (any, error) { return nil, nil },
				"slow": func(ctx context.Context, req *rpc.Request) (any, error) {
					time.Sleep(2 * time.Millisecond)
					return "slow", nil
				},
				"ask": func(ctx context.Context, req *rpc.Request) (any, error) {
					var s string
					err := conn.Call(ctx, "question", req.Params, &s)
					return s, err
				},
				"wait": func(ctx context.Context, req *rpc.Request) (any, error) {
					<-ctx.Done()
					return nil, ctx.Err()
				},
				"tell": func(ctx context.Context, req *rpc.Request) (any, error) {
					return nil, conn.Notify(ctx, "told", req.Params)
				},
			}
			conn = jsonrpc.NewConn(cr, cw, h, &rpc.Options{
				MaxConcurrentRequests: slots,
				MaxFrame:              4 << 10,
				Cancels:               []rpc.CancelRule{{Method: "$/cancel_request", ByID: "id"}},
				Observe:               rec.observe,
			})
			defer conn.Close()

			// The peer: what it writes (in order) and what it reads.
			var wmu sync.Mutex
			var sent []string
			write := func(line string) {
				wmu.Lock()
				defer wmu.Unlock()
				sent = append(sent, line)
				if _, err := io.WriteString(pw, line+"\n"); err != nil {
					t.Errorf("write: %v", err)
				}
			}
			var got []string
			readDone, answered := make(chan struct{}), make(chan struct{})
			go func() {
				defer close(readDone)
				r := ndjson.NewReader(pr, 1<<20)
				for {
					f, err := r.ReadFrame()
					if err != nil {
						return
					}
					got = append(got, string(f))
					if bytes.Contains(f, []byte(`"method":"question"`)) {
						id := rpc.Member(f, "id")
						go func() {
							write(`{"jsonrpc":"2.0","id":` + string(id) + `,"result":"answer"}`)
							close(answered)
						}()
					}
				}
			}()

			big := `{"jsonrpc":"2.0","id":"big","method":"echo","params":"` + strings.Repeat("b", 8<<10) + `"}`
			write(`{"jsonrpc":"2.0","id":1,"method":"echo","params":[1]}`)
			write(`{"jsonrpc":"2.0","method":"note","params":1}`)
			write(`not json`)
			write(big)
			write(`{"jsonrpc":"2.0","id":77,"result":"stray"}`)
			write(`{"jsonrpc":"2.0","id":"a","method":"ask","params":"q"}`)
			write(`{"jsonrpc":"2.0","id":"w","method":"wait"}`)
			write(`{"jsonrpc":"2.0","id":"t","method":"tell","params":{"x":1}}`)
			for i := range 50 {
				write(fmt.Sprintf(`{"jsonrpc":"2.0","method":"note","params":%d}`, i))
			}
			write(`{"jsonrpc":"2.0","method":"$/cancel_request","params":{"id":"w"}}`)
			for i := range 10 {
				write(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"slow"}`, 100+i))
			}
			// The answer to the handler's question must be in before input ends.
			wait(t, answered)
			pw.Close() // end of input: the slow requests are still answered
			wait(t, conn.Done())
			conn.Close()
			<-readDone

			rec.mu.Lock()
			defer rec.mu.Unlock()
			if rec.badTime {
				t.Error("times went backwards within a direction, or an outbound size was wrong")
			}
			// In: every line sent, once, in order; the oversized one by its head.
			wantIn := slices.Clone(sent)
			i := slices.Index(wantIn, big)
			wantIn[i] = big[:ndjson.HeadSize]
			if !slices.Equal(rec.in, wantIn) {
				t.Fatalf("observed in:\n%s\nsent:\n%s", strings.Join(rec.in, "\n"), strings.Join(wantIn, "\n"))
			}
			if rec.sizes[i] != len(big) {
				t.Errorf("the oversized line's size is %d, want %d", rec.sizes[i], len(big))
			}
			// Out: every frame the peer read, once, in order.
			if !slices.Equal(rec.out, got) {
				t.Fatalf("observed out:\n%s\nread by the peer:\n%s", strings.Join(rec.out, "\n"), strings.Join(got, "\n"))
			}
			for _, want := range []string{`"id":null,"error":{"code":-32700`, `"id":"big","error"`, `"method":"question"`, `"method":"told"`, `"id":"w","error"`, `"id":109,"result":"slow"`} {
				if !strings.Contains(strings.Join(got, "\n"), want) {
					t.Errorf("the session lacks %s; the peer read:\n%s", want, strings.Join(got, "\n"))
				}
			}
		})
	}
}

// SlogObserver logs each frame at Debug with secret-looking values masked.
func TestSlogObserver(t *testing.T) {
	forTransports(t, func(t *testing.T, tr transport) {
		var buf syncBuffer
		logger := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
		obs := rpc.SlogObserver(logger, redact.New("hunter2-hunter2"))
		p := tr.rawPeer(t, okHandler, &rpc.Options{Observe: obs})
		p.send(`{"jsonrpc":"2.0","id":1,"method":"login","params":{"apiKey":"k-123456789","note":"pw hunter2-hunter2","bearer":"Bearer abcdefghijkl"}}`)
		p.expect(`{"jsonrpc":"2.0","id":1,"result":"login"}`) // observed, so logged, before it was written
		out := buf.String()
		for _, secret := range []string{"k-123456789", "hunter2-hunter2", "abcdefghijkl"} {
			if strings.Contains(out, secret) {
				t.Fatalf("the traffic log shows %s:\n%s", secret, out)
			}
		}
		for _, want := range []string{`"level":"DEBUG"`, `"msg":"rpc: frame"`, `"dir":"in"`, `"dir":"out"`, `"size":41`, `\"note\":`, `\"method\":\"login\"`} {
			if !strings.Contains(out, want) {
				t.Fatalf("the traffic log lacks %s:\n%s", want, out)
			}
		}
		// Below Debug nothing is logged.
		var quiet syncBuffer
		rpc.SlogObserver(slog.New(slog.NewTextHandler(&quiet, nil)), nil)(rpc.Traffic{Dir: rpc.In, Line: []byte("{}")})
		if quiet.String() != "" {
			t.Fatalf("logged at Info: %s", quiet.String())
		}
	})
}
