// Package framestream joins frame transports (runtime/frame) and newline-delimited streams, until the
// engine takes frame transports itself (rpc.NewTransportConn): Streams gives an engine built on
// io.Reader and io.Writer a frame transport's frames as lines; Lines carries frames as lines on a
// child's stdio; Pair is an in-memory transport pair.
package framestream

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"sync"

	"github.com/bridgekit/bridgekit/runtime/frame"
)

// Streams returns a stream pair over t: r reads t's frames, each followed by a newline; the lines
// written to w are written to t as frames. Closing either closes t. Frames carry no raw newline
// (compact JSON), so a line is a frame.
func Streams(t frame.Transport) (r io.ReadCloser, w io.WriteCloser) {
	s := &streams{t: t}
	return &reader{s: s}, &writer{s: s}
}

type streams struct {
	t    frame.Transport
	once sync.Once
}

func (s *streams) close() error {
	s.once.Do(func() { s.t.Close() })
	return nil
}

type reader struct {
	s    *streams
	rest []byte
}

func (r *reader) Read(p []byte) (int, error) {
	for len(r.rest) == 0 {
		b, err := r.s.t.Read(context.Background())
		if err != nil {
			var tl *frame.TooLargeError
			if errors.As(err, &tl) {
				continue // the engine bounds lines itself; an over-long frame was consumed
			}
			return 0, err
		}
		r.rest = append(append(r.rest[:0], b...), '\n')
	}
	n := copy(p, r.rest)
	r.rest = r.rest[n:]
	return n, nil
}

func (r *reader) Close() error { return r.s.close() }

type writer struct {
	s    *streams
	mu   sync.Mutex
	line []byte
}

func (w *writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			w.line = append(w.line, p...)
			break
		}
		frame := p[:i]
		if len(w.line) > 0 {
			w.line = append(w.line, frame...)
			frame = w.line
		}
		if len(frame) > 0 {
			if err := w.s.t.Write(context.Background(), frame); err != nil {
				return 0, err
			}
		}
		w.line = w.line[:0]
		p = p[i+1:]
	}
	return n, nil
}

func (w *writer) Close() error { return w.s.close() }

// Lines returns a frame transport carrying frames as lines on r and w (a child's stdout and stdin),
// lines longer than max (frame.DefaultMaxFrame if max <= 0) consumed and reported as
// *frame.TooLargeError. Close calls closer.
func Lines(r io.Reader, w io.Writer, closer func() error, max int) frame.Transport {
	if max <= 0 {
		max = frame.DefaultMaxFrame
	}
	return &lines{br: bufio.NewReaderSize(r, 64<<10), w: w, closer: closer, max: max}
}

type lines struct {
	br     *bufio.Reader
	w      io.Writer
	closer func() error
	max    int
	buf    []byte
	wmu    sync.Mutex
	wbuf   []byte
	once   sync.Once
}

func (l *lines) Read(ctx context.Context) ([]byte, error) {
	for {
		l.buf = l.buf[:0]
		over := false
		size := 0
		for {
			chunk, err := l.br.ReadSlice('\n')
			size += len(chunk)
			if !over {
				if len(l.buf)+len(chunk) > l.max+1 {
					over = true
					l.buf = append(l.buf, chunk[:min(len(chunk), frame.HeadSize)]...)
				} else {
					l.buf = append(l.buf, chunk...)
				}
			}
			if err == bufio.ErrBufferFull {
				continue
			}
			if err != nil {
				if err == io.EOF && len(l.buf) > 0 && !over {
					return bytes.TrimRight(l.buf, "\r\n"), nil
				}
				return nil, err
			}
			break
		}
		if over {
			return nil, &frame.TooLargeError{Limit: l.max, Size: size, Head: bytes.Clone(l.buf[:min(len(l.buf), frame.HeadSize)])}
		}
		line := bytes.TrimRight(l.buf, "\r\n")
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		return line, nil
	}
}

func (l *lines) Write(ctx context.Context, b []byte) error {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	if err := ctx.Err(); err != nil {
		return err
	}
	l.wbuf = append(append(l.wbuf[:0], b...), '\n')
	_, err := l.w.Write(l.wbuf)
	return err
}

func (l *lines) Close() error {
	var err error
	l.once.Do(func() {
		if l.closer != nil {
			err = l.closer()
		}
	})
	return err
}

// Pair returns two connected in-memory transports: what one writes the other reads.
func Pair() (frame.Transport, frame.Transport) {
	a, b := make(chan []byte, 4), make(chan []byte, 4)
	done := make(chan struct{})
	once := &sync.Once{}
	return &mem{in: a, out: b, done: done, once: once}, &mem{in: b, out: a, done: done, once: once}
}

type mem struct {
	in, out chan []byte
	done    chan struct{}
	once    *sync.Once
	last    []byte
}

func (m *mem) Read(ctx context.Context) ([]byte, error) {
	select {
	case b := <-m.in:
		return b, nil
	case <-m.done:
		select {
		case b := <-m.in:
			return b, nil
		default:
		}
		return nil, io.EOF
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

var errClosed = errors.New("framestream: closed")

func (m *mem) Write(ctx context.Context, b []byte) error {
	select {
	case <-m.done:
		return errClosed
	default:
	}
	select {
	case m.out <- bytes.Clone(b):
		return nil
	case <-m.done:
		return errClosed
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (m *mem) Close() error {
	m.once.Do(func() { close(m.done) })
	return nil
}
