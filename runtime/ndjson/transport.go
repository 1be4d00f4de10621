package ndjson

import (
	"context"
	"errors"
	"io"
	"reflect"
	"sync"

	"github.com/bridgekit/bridgekit/runtime/frame"
)

// Options configures a Transport. The zero value is ready to use.
type Options struct {
	// MaxFrame limits the size of an inbound line (default DefaultMaxFrame). A longer line is consumed and
	// reported as a *frame.TooLargeError with its head; the next Read goes on with the next line.
	MaxFrame int
}

// Transport is the frame transport of a newline-delimited stream (stdio, pipes, a child's stdio): it reads
// lines with a Reader and writes frames with a Writer.
type Transport struct {
	r        *Reader
	w        *Writer
	in       io.Reader
	out      io.Writer
	once     sync.Once
	closeErr error
}

var _ frame.Transport = (*Transport)(nil)

// NewTransport returns the transport that reads frames from r and writes them to w. opts may be nil.
func NewTransport(r io.Reader, w io.Writer, opts *Options) *Transport {
	var max int
	if opts != nil {
		max = opts.MaxFrame
	}
	return &Transport{r: NewReader(r, max), w: NewWriter(w), in: r, out: w}
}

// Read implements frame.Reader (see Reader.ReadFrame). Only Close interrupts a Read in progress, by closing
// the underlying reader, if it is an io.Closer.
func (t *Transport) Read(ctx context.Context) ([]byte, error) { return t.r.Read(ctx) }

// Write implements frame.Writer (see Writer.Write).
func (t *Transport) Write(ctx context.Context, frame []byte) error { return t.w.Write(ctx, frame) }

// Close fails the waiting writes and closes the underlying reader and writer, once each, if they are
// io.Closers (once, if they are the same value, such as a net.Conn). It does not wait for a Read or Write in
// progress; closing the streams unblocks them, for most. Every call returns the result of the first.
func (t *Transport) Close() error {
	t.once.Do(func() {
		t.closeErr = t.w.Close()
		if rc, ok := t.in.(io.Closer); ok && !sameObject(t.in, t.out) {
			t.closeErr = errors.Join(t.closeErr, rc.Close())
		}
	})
	return t.closeErr
}

// sameObject reports whether r and w are the same value, such as one net.Conn for both directions.
func sameObject(r io.Reader, w io.Writer) bool {
	t := reflect.TypeOf(r)
	return t == reflect.TypeOf(w) && t.Comparable() && any(r) == any(w)
}
