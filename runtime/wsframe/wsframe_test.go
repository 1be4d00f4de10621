package wsframe_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/coder/websocket"
	"go.uber.org/goleak"

	"github.com/bridgekit/bridgekit/runtime/frame"
	"github.com/bridgekit/bridgekit/runtime/wsframe"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// pair returns a server-side Transport and the raw client socket.
func pair(t *testing.T, opts *wsframe.Options) (*wsframe.Transport, *websocket.Conn) {
	t.Helper()
	got := make(chan *wsframe.Transport, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			t.Error(err)
			return
		}
		got <- wsframe.New(c, opts)
	}))
	t.Cleanup(srv.Close)
	c, _, err := websocket.Dial(context.Background(), "ws"+strings.TrimPrefix(srv.URL, "http"), nil)
	if err != nil {
		t.Fatal(err)
	}
	tr := <-got
	t.Cleanup(func() {
		c.CloseNow()
		tr.Close()
		<-tr.Done()
	})
	return tr, c
}

func TestRoundTrip(t *testing.T) {
	ctx := context.Background()
	tr, c := pair(t, nil)
	c.Write(ctx, websocket.MessageText, []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize"}`))
	b, err := tr.Read(ctx)
	if err != nil || string(b) != `{"jsonrpc":"2.0","id":1,"method":"initialize"}` {
		t.Fatalf("Read = %s, %v", b, err)
	}
	if err := tr.Write(ctx, []byte(`{"jsonrpc":"2.0","id":1,"result":{}}`)); err != nil {
		t.Fatal(err)
	}
	typ, b, err := c.Read(ctx)
	if err != nil || typ != websocket.MessageText || string(b) != `{"jsonrpc":"2.0","id":1,"result":{}}` {
		t.Fatalf("client read %v %s %v", typ, b, err)
	}
}

// An over-long message is reported with its head and the socket goes on; past the hard limit the socket
// is closed with 1009.
func TestTooLarge(t *testing.T) {
	ctx := context.Background()
	tr, c := pair(t, &wsframe.Options{MaxFrame: 64})
	long := `{"jsonrpc":"2.0","id":7,"method":"x","params":"` + strings.Repeat("a", 200) + `"}`
	exact := `{"a":"` + strings.Repeat("b", 64-8) + `"}`
	go func() {
		c.Write(ctx, websocket.MessageText, []byte(long))
		c.Write(ctx, websocket.MessageText, []byte(exact))
		c.Write(ctx, websocket.MessageText, []byte(strings.Repeat("x", 64*wsframe.HardLimitFactor+1)))
	}()
	_, err := tr.Read(ctx)
	var tl *frame.TooLargeError
	if !errors.As(err, &tl) || tl.Limit != 64 || tl.Size != len(long) || string(tl.Head) != long {
		t.Fatalf("Read = %v, want a TooLargeError with the frame", err)
	}
	b, err := tr.Read(ctx)
	if err != nil || string(b) != exact {
		t.Fatalf("Read after an over-long frame = %q, %v", b, err)
	}
	if _, err := tr.Read(ctx); !errors.As(err, &tl) {
		t.Fatalf("Read = %v, want a TooLargeError", err)
	}
	if _, _, err := c.Read(ctx); websocket.CloseStatus(err) != websocket.StatusMessageTooBig {
		t.Fatalf("client got %v, want close 1009", err)
	}
}

func TestBinary(t *testing.T) {
	ctx := context.Background()
	for _, policy := range []wsframe.Binary{wsframe.IgnoreBinary, wsframe.RejectBinary} {
		tr, c := pair(t, &wsframe.Options{Binary: policy})
		c.Write(ctx, websocket.MessageBinary, []byte(`{"jsonrpc":"2.0","method":"x"}`))
		c.Write(ctx, websocket.MessageText, []byte(`{}`))
		if b, err := tr.Read(ctx); err != nil || string(b) != `{}` {
			t.Fatalf("Read = %q %v", b, err)
		}
		tr.Write(ctx, []byte(`{"last":true}`))
		var got []string
		for {
			_, b, err := c.Read(ctx)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, string(b))
			if string(b) == `{"last":true}` {
				break
			}
		}
		want := 1
		if policy == wsframe.RejectBinary {
			want = 2
			if !strings.Contains(got[0], `"code":-32600`) || !strings.Contains(got[0], `"id":null`) {
				t.Fatalf("reply to a binary frame: %s", got[0])
			}
		}
		if len(got) != want {
			t.Fatalf("policy %d: client got %q", policy, got)
		}
	}
}

func TestCloseCodes(t *testing.T) {
	ctx := context.Background()
	for code, eof := range map[websocket.StatusCode]bool{
		websocket.StatusNormalClosure:   true,
		websocket.StatusGoingAway:       false,
		websocket.StatusNoStatusRcvd:    true,
		websocket.StatusPolicyViolation: false,
	} {
		tr, c := pair(t, nil)
		go c.Close(code, "bye")
		_, err := tr.Read(ctx)
		if eof != (err == io.EOF) {
			t.Errorf("close %d: Read = %v", code, err)
		}
		if !eof && websocket.CloseStatus(err) != code {
			t.Errorf("close %d: Read = %v, want the close error", code, err)
		}
	}
	// CloseWith sends its code.
	tr, c := pair(t, nil)
	go tr.Read(ctx)
	tr.CloseWith(websocket.StatusProtocolError, "First message must be initialize")
	_, _, err := c.Read(ctx)
	var ce websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != websocket.StatusProtocolError || ce.Reason != "First message must be initialize" {
		t.Fatalf("client got %v", err)
	}
	<-tr.Done()
	if _, err := tr.Read(ctx); err == nil {
		t.Fatal("Read after Close succeeded")
	}
	if err := tr.Write(ctx, []byte(`{}`)); err == nil {
		t.Fatal("Write after Close succeeded")
	}
}
