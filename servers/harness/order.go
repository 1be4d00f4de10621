package harness

import (
	"bytes"
	"context"
	"slices"
	"sync"

	"github.com/bridgekit/bridgekit/gen/agentpmmachine"
	"github.com/bridgekit/bridgekit/runtime/rpc"
)

// The Harness's main loop reads a request, handles it, writes its answer,
// then reads the next: between Runs a client may write initialize and
// start_run without waiting, and start_run still finds the session
// initialized; the answers come in the order of the requests. The
// connection runs handlers concurrently (a Run's start_run lasts the whole
// Run, and cancel_run, a second start_run or memory_operation must be
// answered meanwhile), so a session puts them back in order: the codec
// notes each request's id as it is read, a handler waits for the requests
// read before it, and a request gives up its turn once its answer has been
// written. A Run's start_run gives it up once its Run is active; while a
// Run is active requests do not wait (the Harness's stdin reader answers
// them at once, or at the Run's yield points). cancel_run never waits.

// turns is the queue of requests waiting for the main loop, by raw id, in
// arrival order.
type turns struct {
	mu      sync.Mutex
	ids     []string
	changed chan struct{} // closed and replaced when ids loses its head
}

func newTurns() *turns { return &turns{changed: make(chan struct{})} }

// arrived notes a request read from the client.
func (t *turns) arrived(id string) {
	t.mu.Lock()
	t.ids = append(t.ids, id)
	t.mu.Unlock()
}

// replied gives up the turn of the request answered by a frame just
// written, if it is still waiting.
func (t *turns) replied(id string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if i := slices.Index(t.ids, id); i >= 0 {
		t.remove(i)
	}
}

// remove deletes entry i; t.mu is held.
func (t *turns) remove(i int) {
	t.ids = slices.Delete(t.ids, i, i+1)
	if i == 0 {
		close(t.changed)
		t.changed = make(chan struct{})
	}
}

// take waits until the request id is the oldest one waiting, unless wait is
// false, and returns the function that gives up its turn early
// (idempotent); otherwise the turn ends when the answer is written. It
// fails, having given up its place, when ctx ends first.
func (t *turns) take(ctx context.Context, id string, wait bool) (func(), error) {
	var once sync.Once
	done := func() { once.Do(func() { t.replied(id) }) }
	for wait {
		t.mu.Lock()
		head, changed := len(t.ids) == 0 || t.ids[0] == id, t.changed
		t.mu.Unlock()
		if head {
			break
		}
		select {
		case <-changed:
		case <-ctx.Done():
			done()
			return done, ctx.Err()
		}
	}
	if !wait {
		done()
	}
	return done, nil
}

// orderedCodec is the machine codec that notes requests as they are read.
type orderedCodec struct {
	rpc.Codec
	turns *turns
}

func (c *orderedCodec) Decode(line []byte, m *rpc.Message) error {
	err := c.Codec.Decode(line, m)
	if err == nil && m.Kind == rpc.KindRequest && string(m.Method) != agentpmmachine.MethodCancelRun {
		c.turns.arrived(string(m.ID))
	}
	return err
}

// DecodeHead tells the connection what a line over its size limit was
// (rpc.HeadDecoder), as the machine codec does: a request is then refused
// under its own id and an event is not answered. Without it the wrapper
// would hide the machine codec's DecodeHead.
func (c *orderedCodec) DecodeHead(head []byte) (rpc.Kind, []byte) {
	if hd, ok := c.Codec.(rpc.HeadDecoder); ok {
		return hd.DecodeHead(head)
	}
	return 0, nil
}

// turnKey carries a start_run's release of its turn in its context.
type turnKey struct{}

// releaseTurn gives up the turn of the request handling ctx, if it has one.
func releaseTurn(ctx context.Context) {
	if done, ok := ctx.Value(turnKey{}).(func()); ok {
		done()
	}
}

// replyPrefixes begin the frames that answer a request, up to their id: the
// machine codec's own output for a response and an error frame, so that
// they follow it.
var replyPrefixes = func() [][]byte {
	const marker = `"\u0000"`
	c := agentpmmachine.NewCodec("", "")
	id := rpc.RawID([]byte(marker))
	frames := [][]byte{
		c.AppendHead(nil, &rpc.Header{Kind: rpc.KindResponse, ID: id}),
		c.AppendError(nil, &rpc.Header{Kind: rpc.KindError, ID: id}, &rpc.Error{Name: "x"}),
	}
	for i, f := range frames {
		at := bytes.Index(f, []byte(marker))
		if at < 0 {
			panic("harness: the machine codec does not write a reply's id")
		}
		frames[i] = f[:at]
	}
	return frames
}()

// answered calls f with the raw id of every answer among the frames in p.
func answered(p []byte, f func(id string)) {
	for len(p) > 0 {
		line := p
		if i := bytes.IndexByte(p, '\n'); i >= 0 {
			line, p = p[:i], p[i+1:]
		} else {
			p = nil
		}
		for _, prefix := range replyPrefixes {
			if rest, ok := bytes.CutPrefix(line, prefix); ok {
				if id, ok := leadingString(rest); ok {
					f(string(id))
				}
				break
			}
		}
	}
}

// leadingString returns the JSON string that b starts with, quotes and
// escapes as written.
func leadingString(b []byte) ([]byte, bool) {
	if len(b) == 0 || b[0] != '"' {
		return nil, false
	}
	for i := 1; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return b[:i+1], true
		}
	}
	return nil, false
}
