package frame

import (
	"context"
	"io"
	"sync"
)

// PipeEnd is one end of an in-memory frame transport made by Pipe.
type PipeEnd struct {
	in, out chan *[]byte  // frames from the peer, frames to the peer
	done    chan struct{} // closed by Close
	wdone   chan struct{} // closed by CloseWrite or Close: the peer's reads end with io.EOF
	peer    *PipeEnd
	close   sync.Once
	cwrite  sync.Once
	last    *[]byte // the frame Read returned last, recycled at the next Read
}

// Pipe returns the two ends of an in-memory transport: what one end writes the other reads, frame by frame,
// in order. Write returns once the other end's Read has taken a copy of the frame, so a pair of ends
// throttles a fast writer as a synchronous pipe does; frames are not bounded in size. Close ends both
// directions of its end; CloseWrite ends only its writes (the peer then reads io.EOF), as a child closing its
// stdout does. Reads and writes on a closed end, and writes towards a closed end, fail with
// io.ErrClosedPipe.
func Pipe() (a, b *PipeEnd) {
	ab, ba := make(chan *[]byte), make(chan *[]byte)
	a = &PipeEnd{in: ba, out: ab, done: make(chan struct{}), wdone: make(chan struct{})}
	b = &PipeEnd{in: ab, out: ba, done: make(chan struct{}), wdone: make(chan struct{})}
	a.peer, b.peer = b, a
	return a, b
}

// Read implements Reader.
func (p *PipeEnd) Read(ctx context.Context) ([]byte, error) {
	if p.last != nil {
		putBuffer(p.last)
		p.last = nil
	}
	select {
	case <-p.done:
		return nil, io.ErrClosedPipe
	default:
	}
	select {
	case b := <-p.in:
		p.last = b
		return *b, nil
	case <-p.peer.wdone:
		return nil, io.EOF
	case <-p.done:
		return nil, io.ErrClosedPipe
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Write implements Writer.
func (p *PipeEnd) Write(ctx context.Context, frame []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	select {
	case <-p.wdone:
		return io.ErrClosedPipe
	case <-p.peer.done:
		return io.ErrClosedPipe
	default:
	}
	b := getBuffer(len(frame))
	*b = append((*b)[:0], frame...)
	select {
	case p.out <- b:
		return nil
	case <-p.wdone:
	case <-p.peer.done:
	case <-ctx.Done():
		putBuffer(b)
		return ctx.Err()
	}
	putBuffer(b)
	return io.ErrClosedPipe
}

// CloseWrite ends this end's writes: the peer reads io.EOF once it has read every frame written before.
func (p *PipeEnd) CloseWrite() error {
	p.cwrite.Do(func() { close(p.wdone) })
	return nil
}

// Close implements Transport: it ends this end's reads and writes, and the peer's writes.
func (p *PipeEnd) Close() error {
	p.close.Do(func() { close(p.done) })
	return p.CloseWrite()
}

var buffers = sync.Pool{New: func() any { return new([]byte) }}

const maxPooled = 1 << 20

func getBuffer(n int) *[]byte {
	b := buffers.Get().(*[]byte)
	if cap(*b) < n {
		*b = make([]byte, 0, max(n, 512))
	}
	return b
}

func putBuffer(b *[]byte) {
	if cap(*b) <= maxPooled {
		buffers.Put(b)
	}
}
