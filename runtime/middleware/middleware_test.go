package middleware_test

import (
	"bufio"
	"context"
	"errors"
	"github.com/bridgekit/bridgekit/internal/testio"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/bridgekit/bridgekit/runtime/jsonrpc"
	"github.com/bridgekit/bridgekit/runtime/middleware"
	"github.com/bridgekit/bridgekit/runtime/rpc"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// syncBuffer is a goroutine-safe sink the test reads.
type syncBuffer = testio.Buffer

// serve starts a JSON-RPC connection serving h with mw and returns a
// function that sends one line and returns the connection's answer.
func serve(t *testing.T, h rpc.Handler, mw ...rpc.Middleware) func(line string) string {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	conn := jsonrpc.NewConn(inR, outW, h, &rpc.Options{Middleware: mw})
	lines := bufio.NewScanner(outR)
	t.Cleanup(func() {
		inW.Close()
		conn.Close()
		outR.Close()
	})
	return func(line string) string {
		t.Helper()
		got := make(chan string, 1)
		go func() {
			if lines.Scan() {
				got <- lines.Text()
			}
			close(got)
		}()
		if _, err := io.WriteString(inW, line+"\n"); err != nil {
			t.Fatal(err)
		}
		select {
		case l := <-got:
			return l
		case <-time.After(10 * time.Second):
			t.Fatal("no answer")
			return ""
		}
	}
}

var handlers = rpc.HandlerFunc(func(ctx context.Context, req *rpc.Request) (any, error) {
	switch req.Method {
	case "boom":
		panic("kaboom with sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789")
	case "fail":
		return nil, &rpc.Error{Code: -32002, Message: "no such thing"}
	case "plain":
		return nil, errors.New("plain failure")
	}
	return struct {
		OK     string `json:"ok"`
		APIKey string `json:"apiKey"`
	}{"yes", "hunter2hunter2"}, nil
})

func TestRecoverAnswersAndLogs(t *testing.T) {
	var log syncBuffer
	call := serve(t, handlers, middleware.Recover(slog.New(slog.NewTextHandler(&log, nil))))
	got := call(`{"jsonrpc":"2.0","id":7,"method":"boom"}`)
	if want := `{"jsonrpc":"2.0","id":7,"error":{"code":-32603,"message":"internal error: handler panicked"}}`; got != want {
		t.Fatalf("a panicking handler answered\n\t%s\nwant\n\t%s", got, want)
	}
	// The connection goes on serving.
	if got := call(`{"jsonrpc":"2.0","id":8,"method":"ok"}`); !strings.Contains(got, `"id":8,"result"`) {
		t.Fatalf("after a panic the connection answered %s", got)
	}
	out := log.String()
	for _, want := range []string{"level=ERROR", "rpc: handler panicked", "method=boom", "id=7", "kaboom", "middleware_test.go"} {
		if !strings.Contains(out, want) {
			t.Errorf("the log lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "abcdefghijklmnopqrstuvwxyz0123456789") {
		t.Errorf("the panic's secret reached the log:\n%s", out)
	}
}

func TestLoggingRecords(t *testing.T) {
	var log syncBuffer
	logger := slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	call := serve(t, handlers,
		middleware.Logging(logger, &middleware.LoggingOptions{Payloads: true, MaxPayload: 200}),
		middleware.Recover(logger))
	if got := call(`{"jsonrpc":"2.0","id":1,"method":"ok","params":{"token":"s3cr3t-value-123","q":"x"}}`); !strings.Contains(got, `"apiKey":"hunter2hunter2"`) {
		t.Fatalf("the middleware changed the answer: %s", got)
	}
	call(`{"jsonrpc":"2.0","id":2,"method":"fail"}`)
	call(`{"jsonrpc":"2.0","id":3,"method":"boom"}`)
	out := log.String()
	for _, want := range []string{
		`level=INFO msg="rpc: served" kind=request method=ok id=1`,
		`params="{\"token\":\"[REDACTED]\",\"q\":\"x\"}"`,
		`result="{\"ok\":\"yes\",\"apiKey\":\"[REDACTED]\"}"`,
		`level=WARN msg="rpc: served" kind=request method=fail id=2`, `code=-32002`, `err="rpc error -32002: no such thing"`,
		`method=boom id=3`, `code=-32603`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the log lacks %s:\n%s", want, out)
		}
	}
	for _, secret := range []string{"s3cr3t-value-123", "hunter2hunter2"} {
		if strings.Contains(out, secret) {
			t.Errorf("the log quotes the secret %q:\n%s", secret, out)
		}
	}
}

// Without Payloads, or with the level disabled, nothing is encoded and the
// records carry no payload.
func TestLoggingQuiet(t *testing.T) {
	var log syncBuffer
	call := serve(t, handlers, middleware.Logging(slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelWarn})), nil))
	call(`{"jsonrpc":"2.0","id":1,"method":"ok","params":{"q":"x"}}`)
	call(`{"jsonrpc":"2.0","id":2,"method":"plain"}`)
	out := log.String()
	if strings.Contains(out, "method=ok") || strings.Contains(out, "params=") {
		t.Errorf("a successful request was logged below the level, or with its params:\n%s", out)
	}
	if !strings.Contains(out, `method=plain id=2`) || !strings.Contains(out, `err="plain failure"`) {
		t.Errorf("the failure was not logged:\n%s", out)
	}
}
