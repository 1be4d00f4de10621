package harness

import (
	"context"
	"slices"
	"sync"

	"github.com/bridgekit/bridgekit/gen/agentpmmachine"
	"github.com/bridgekit/bridgekit/runtime/rpc"
)

// The Harness's main loop reads a request, handles it, then reads the
// next: between Runs a client may write initialize and start_run without
// waiting, and start_run still finds the session initialized. The
// connection runs handlers concurrently (a Run's start_run lasts the whole
// Run, and cancel_run, a second start_run or memory_operation must be
// answered meanwhile), so a session puts them back in order: the codec
// notes each request's id as it is read, and a handler waits for the
// requests read before it. A Run's start_run gives up its turn once its
// Run is active; while a Run is active requests do not wait (the Harness's
// stdin reader answers them at once, or at the Run's yield points).
// cancel_run never waits. Replies may still be written in another order
// than their requests: clients match them by id.

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

// drop forgets a request that no handler will take (the connection refused
// it); a later request with the same id is not affected.
func (t *turns) drop(id string) {
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
// false, and returns the function that gives up its turn (idempotent). It
// fails, having given up its place, when ctx ends first.
func (t *turns) take(ctx context.Context, id string, wait bool) (func(), error) {
	var once sync.Once
	done := func() {
		once.Do(func() {
			t.mu.Lock()
			defer t.mu.Unlock()
			if i := slices.Index(t.ids, id); i >= 0 {
				t.remove(i)
			}
		})
	}
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

// turnKey carries a start_run's release of its turn in its context.
type turnKey struct{}

// releaseTurn gives up the turn of the request handling ctx, if it has one.
func releaseTurn(ctx context.Context) {
	if done, ok := ctx.Value(turnKey{}).(func()); ok {
		done()
	}
}
