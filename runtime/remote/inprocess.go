package remote

import (
	"context"
	"io"
	"sync"

	"github.com/bridgekit/bridgekit/runtime/frame"
)

// InProcess returns a Backend for an agent that runs in this process. start is called for each new
// connection with ctx (which ends with the connection) and the agent's end of a transport whose other end
// is the connection; it starts the agent on it (an engine's connection, say) and returns.
//
// Unlike a Backend over frame.Pipe, which hands each frame the agent writes to the connection's own
// goroutine, the agent's Write logs the frame and queues it for the client itself, under the
// connection's lock: a frame costs no goroutine's wake-up on its way out, and the connection no goroutine
// while it is idle. Write never waits for the client: a client that reads too slowly is closed, as with
// any backend, by the MaxQueuedBytes bound. The frames the client sends reach the agent's Read through an
// in-memory pipe, one at a time, as from frame.Pipe.
//
// The agent's end ends the connection when the agent closes it. The Server recognizes the transport the
// Backend returns: a Backend that wraps it in a transport of its own (to log, say) gets the frame.Pipe
// behaviour instead, the agent's frames read by the connection's goroutine.
func InProcess(start func(ctx context.Context, info ConnInfo, t frame.Transport) error) Backend {
	return func(ctx context.Context, info ConnInfo) (frame.Transport, error) {
		server, agent := frame.Pipe()
		d := &direct{PipeEnd: server, ready: make(chan struct{}), closed: make(chan struct{})}
		if err := start(ctx, info, &directAgent{in: agent, d: d}); err != nil {
			d.Close() // a Write the agent started fails
			agent.Close()
			return nil, err
		}
		return d, nil
	}
}

// direct is the connection's end of an InProcess backend: Write goes to the agent through the pipe, and
// what the agent writes is pushed to the sink the connection sets (the connection starts no pump for a
// pusher). A connection that reads it instead (a Backend wrapped it, hiding push) gets the agent's frames
// through the pipe, as from frame.Pipe.
type direct struct {
	*frame.PipeEnd
	closeOnce sync.Once
	closed    chan struct{} // closed by Close: the agent's writes fail from then on

	mu          sync.Mutex
	ready       chan struct{} // closed once sink and end are set, or the connection reads
	sink        func([]byte)  // the connection's deliver
	end         func()        // ends the connection when the agent closes its end
	read        bool          // the connection reads the agent's frames from the pipe
	agentClosed bool
}

// pusher is a backend transport that delivers the agent's frames itself (InProcess's).
type pusher interface {
	// push sets the connection's sink for the agent's frames and the function that ends the connection
	// when the agent closes its end. It reports false when the agent has closed it already.
	push(sink func([]byte), end func()) bool
}

func (d *direct) push(sink func([]byte), end func()) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.read {
		return !d.agentClosed // read already: the frames go through the pipe
	}
	d.sink, d.end = sink, end
	close(d.ready)
	return !d.agentClosed
}

// Read is for a connection that did not push (see direct): from its first call, the agent's writes go
// through the pipe.
func (d *direct) Read(ctx context.Context) ([]byte, error) {
	d.mu.Lock()
	if !d.read && d.sink == nil {
		d.read = true
		close(d.ready)
	}
	d.mu.Unlock()
	return d.PipeEnd.Read(ctx)
}

// Close closes the connection's end.
func (d *direct) Close() error {
	d.closeOnce.Do(func() { close(d.closed) })
	return d.PipeEnd.Close()
}

// directAgent is the agent's end of an InProcess backend.
type directAgent struct {
	in *frame.PipeEnd
	d  *direct
}

func (a *directAgent) Read(ctx context.Context) ([]byte, error) { return a.in.Read(ctx) }

// Write hands frame to the connection, which logs and queues it, copying what it keeps. It waits only for
// the connection to be set up, which is under way when the agent is started.
func (a *directAgent) Write(ctx context.Context, frame []byte) error {
	select {
	case <-a.d.ready:
	case <-a.d.closed:
		return io.ErrClosedPipe
	case <-ctx.Done():
		return ctx.Err()
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	select {
	case <-a.d.closed:
		return io.ErrClosedPipe
	default:
	}
	if a.d.sink == nil {
		return a.in.Write(ctx, frame) // the connection reads (set before ready closed)
	}
	a.d.sink(frame)
	return nil
}

// Close ends the agent's end: the connection ends as when an agent process exits.
func (a *directAgent) Close() error {
	a.in.Close()
	a.d.mu.Lock()
	first := !a.d.agentClosed
	a.d.agentClosed = true
	end := a.d.end
	a.d.mu.Unlock()
	if first && end != nil {
		end()
	}
	return nil
}
