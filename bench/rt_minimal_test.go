package bench

import (
	"bufio"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
)

// TestMinimalWire feeds the minimal runtime raw lines, as a peer that is
// not the minimal runtime would, and checks every reply: it must be a
// correct JSON-RPC 2.0 runtime to be a fair lower bound.
func TestMinimalWire(t *testing.T) {
	long := strings.Repeat("x", 200<<10) // longer than the 64 KiB read buffer
	svc := &Service{}
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","prompt":[]}}`,
		`{"jsonrpc":"2.0","id":"a","method":"session/prompt","params":{"sessionId":"s","prompt":[{"type":"text","text":"hello"}]}}`,
		`  `,
		`{"jsonrpc":"2.0","id":2,"method":"no/such"}`,
		`{"jsonrpc":"2.0","method":"no/such"}`,
		`{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"prompt":"not a list"}}`,
		`{"jsonrpc":"2.0","id":4,`,
		`{"jsonrpc":"1.0","id":5,"method":"session/prompt"}`,
		`{"jsonrpc":"2.0","id":6,"method":"session/prompt","params":{"sessionId":"s","prompt":[{"type":"text","text":"` + long + `"}]}}`,
		`{"jsonrpc":"2.0","id":7,"method":"bench/barrier","params":{"want":1}}`, // last line, no newline
	}, "\n")
	want := []string{
		`{"jsonrpc":"2.0","id":"a","result":{"stopReason":"end_turn","echoed":5}}`,
		`{"jsonrpc":"2.0","id":2,"error":{"code":-32601,"message":"method not found: no/such"}}`,
		`{"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"invalid params: `,
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,`,
		`{"jsonrpc":"2.0","id":5,"error":{"code":-32600,`,
		`{"jsonrpc":"2.0","id":6,"result":{"stopReason":"end_turn","echoed":204800}}`,
		`{"jsonrpc":"2.0","id":7,"result":{"seen":1}}`,
	}

	out, w := io.Pipe()
	c := Minimal().Open(strings.NewReader(in), w, svc)
	br := bufio.NewReader(out)
	for i, prefix := range want {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("reply %d: %v", i, err)
		}
		if !strings.HasPrefix(line, prefix) {
			t.Errorf("reply %d = %s, want %s…", i, strings.TrimSpace(line), prefix)
		}
		if !jsontext.Value(line).IsValid() {
			t.Errorf("reply %d is not valid JSON: %s", i, line)
		}
	}
	select {
	case <-c.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("connection did not end at the end of its input")
	}
	if err := c.Err(); err == nil || !isEOFish(err) {
		t.Errorf("Err() = %v, want EOF", err)
	}
	if got := svc.Seen(); got != 1 {
		t.Errorf("service saw %d notifications, want 1", got)
	}
	w.Close()
	c.Close()
}
