package rpc_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/bridgekit/bridgekit/runtime/envelope"
	"github.com/bridgekit/bridgekit/runtime/rpc"
)

// decodes is a handler whose every method decodes its params into an
// object with an integer member n, as a generated handler does.
var decodes = rpc.HandlerFunc(func(_ context.Context, req *rpc.Request) (any, error) {
	var p struct {
		N int `json:"n"`
	}
	if err := rpc.DecodeParams(req.Params, &p); err != nil {
		return nil, err
	}
	return p.N, nil
})

// A notification whose params do not decode reaches OnFrameError with its
// method, the decode error and its whole line, whether the reader handled
// it itself (nothing queued) or queued it behind a slow one; and it is
// counted. A request with the same params keeps its -32602 answer.
func TestUndecodableNotificationReported(t *testing.T) {
	forTransports(t, func(t *testing.T, tr transport) {
		release := make(chan struct{})
		h := rpc.HandlerFunc(func(ctx context.Context, req *rpc.Request) (any, error) {
			if req.Method == "slow" {
				<-release
				return nil, nil
			}
			return decodes.Handle(ctx, req)
		})
		p := tr.rawPeer(t, h, nil)
		inline := `{"jsonrpc":"2.0","method":"session/update","params":{"n":"one"}}`
		p.send(inline)
		checkBadParams(t, p.frameError(), "session/update", inline)

		// Queued: behind a slow notification, then a burst.
		p.send(`{"jsonrpc":"2.0","method":"slow"}`)
		var queued []string
		for i := range 20 {
			queued = append(queued, fmt.Sprintf(`{"jsonrpc":"2.0","method":"m%d","params":{"n":[%d]}}`, i, i))
		}
		p.send(queued...)
		close(release)
		for i, line := range queued {
			checkBadParams(t, p.frameError(), fmt.Sprintf("m%d", i), line)
		}
		p.send(`{"jsonrpc":"2.0","id":7,"method":"req","params":{"n":true}}`)
		if r := parseReply(t, p.recv()); r.Error == nil || r.Error.Code != rpc.CodeInvalidParams {
			t.Fatalf("a request with bad params got %+v, want a -32602 answer", r)
		}
		st := p.c.Stats()
		if got := st.FrameErrors[rpc.FrameBadParams]; got != 21 {
			t.Fatalf("Stats counts %d notifications dropped undecoded, want 21 (%+v)", got, st)
		}
		if st.Unreported != 0 {
			t.Fatalf("Stats: %d unreported", st.Unreported)
		}
	})
}

func checkBadParams(t *testing.T, fe *rpc.FrameError, method, line string) {
	t.Helper()
	if fe.Kind != rpc.FrameBadParams || fe.Method != method || string(fe.Frame) != line || !errors.Is(fe, rpc.ErrInvalidParams) {
		t.Fatalf("reported %v method %q err %v frame %q; want bad params of %s in %s", fe.Kind, fe.Method, fe.Err, fe.Frame, method, line)
	}
}

// An AgentPM event whose payload does not decode is reported the same way,
// with the event's id.
func TestUndecodableEventReported(t *testing.T) {
	cr, pw := io.Pipe()
	pr, cw := io.Pipe()
	defer pr.Close()
	go io.Copy(io.Discard, pr)
	reports := make(chan *rpc.FrameError, 4)
	c := rpc.NewConn(cr, cw, envelope.NewCodec(envelope.Machine, "c-", ""), decodes, &rpc.Options{
		OnFrameError: func(fe *rpc.FrameError) { reports <- fe },
	})
	defer c.Close()
	line := `{"protocol":"agentpm-harness-machine","version":1,"kind":"event","id":"corr-1","method":"harness_event","payload":{"n":{}}}`
	if _, err := io.WriteString(pw, line+"\n"); err != nil {
		t.Fatal(err)
	}
	fe := wait(t, reports)
	checkBadParams(t, fe, "harness_event", line)
	if fe.ID.String() != `"corr-1"` {
		t.Fatalf("reported id %s", fe.ID)
	}
	if n := c.Stats().FrameErrors[rpc.FrameBadParams]; n != 1 {
		t.Fatalf("Stats counts %d", n)
	}
	pw.Close()
}

// With no Logger, a notification dropped undecoded is logged through
// log/slog's default logger, its quote of the line redacted; other
// diagnostics are not.
func TestUndecodableNotificationLoggedByDefault(t *testing.T) {
	forTransports(t, func(t *testing.T, tr transport) {
		logs := newLogSink()
		saved := slog.Default()
		slog.SetDefault(slog.New(slog.NewTextHandler(logs, nil)))
		defer slog.SetDefault(saved)
		p := tr.rawPeer(t, decodes, nil)
		const secret = "sk-abcdefghijklmnopqrstuvwxyz"
		p.send(`{"jsonrpc":"2.0","method":"session/update","params":{"n":"one"}}`)
		p.send(`{"jsonrpc":"2.0","method":"` + secret + `","params":{"n":"one"}}`)
		p.send(`{"jsonrpc":"2.0","id":99,"result":"stray"}`) // not logged: no Logger
		// Reported after the stray reply, which the reader reported first:
		// once it is logged, the stray reply's report has been dealt with.
		p.send(`{"jsonrpc":"2.0","method":"last","params":{"n":"one"}}`)
		for range 4 {
			p.frameError()
		}
		logs.waitFor(t, "notification dropped", 3)
		out := logs.String()
		if !strings.Contains(out, "method=session/update") || !strings.Contains(out, "bad params") {
			t.Fatalf("the log line lacks the method or the kind: %s", out)
		}
		if strings.Contains(out, secret) {
			t.Fatalf("the log line quotes the secret: %s", out)
		}
		if strings.Contains(out, "stray") {
			t.Fatalf("logged a diagnostic with no Logger set: %s", out)
		}
	})
}

// The whole lines kept for reports are bounded in bytes: with a callback
// that does not keep up, reports go on, but past the bound without their
// line.
func TestReportedFramesBounded(t *testing.T) {
	forTransports(t, func(t *testing.T, tr transport) {
		block := make(chan struct{})
		reports := make(chan *rpc.FrameError, 1000)
		p := tr.rawPeer(t, decodes, &rpc.Options{OnFrameError: func(fe *rpc.FrameError) {
			<-block
			reports <- fe
		}})
		big := strings.Repeat("x", 512<<10)
		const n = 12
		for range n {
			p.send(`{"jsonrpc":"2.0","method":"m","params":{"n":"` + big + `"}}`)
		}
		// A request after them is answered once they have been handled.
		p.send(`{"jsonrpc":"2.0","id":1,"method":"m","params":{"n":1}}`)
		p.expect(`{"jsonrpc":"2.0","id":1,"result":1}`)
		if got := p.c.Stats().FrameErrors[rpc.FrameBadParams]; got != n {
			t.Fatalf("%d of %d undecodable notifications counted", got, n)
		}
		close(block)
		kept := 0
		for range n {
			fe := wait(t, reports)
			if fe.Frame != nil {
				kept++
				if !bytes.Contains(fe.Frame, []byte(big)) {
					t.Fatal("a kept line is not whole")
				}
			}
		}
		if kept == 0 || kept >= n {
			t.Fatalf("%d of %d lines of 512 KiB kept; want some, within 4 MiB", kept, n)
		}
	})
}
