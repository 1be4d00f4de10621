package serve

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/bridgekit/bridgekit/runtime/jsonrpc"
)

func TestEnded(t *testing.T) {
	for _, err := range []error{nil, io.EOF, fmt.Errorf("read: %w", io.ErrClosedPipe), os.ErrClosed, os.ErrDeadlineExceeded} {
		if Ended(err) != nil {
			t.Errorf("%v is not a clean end", err)
		}
	}
	if boom := errors.New("write: broken pipe"); Ended(boom) != boom {
		t.Error("a write error is taken for a clean end")
	}
}

func TestUntil(t *testing.T) {
	// The input ends: a clean end.
	conn := jsonrpc.NewConn(strings.NewReader(""), io.Discard, nil, nil)
	if err := Until(context.Background(), conn); err != nil {
		t.Fatalf("end of input: %v", err)
	}
	// The context ends first: its error, at once.
	pr, pw := io.Pipe()
	defer pw.Close()
	conn = jsonrpc.NewConn(pr, io.Discard, nil, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := Until(ctx, conn); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("context: %v", err)
	}
}
