package rpc

import (
	"bytes"
	"context"
	stdjson "encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Call sends a request and waits for its reply, then decodes the reply's body into result (unless result
// is nil). See Send.
func (c *Conn) Call(ctx context.Context, method string, params, result any) error {
	return c.Send(ctx, Outbound{Method: method, Params: params}, result)
}

// Notify sends a notification. See Send.
func (c *Conn) Notify(ctx context.Context, method string, params any) error {
	return c.Send(ctx, Outbound{Kind: KindNotification, Method: method, Params: params}, nil)
}

// Send sends m. Params are marshalled in the same pass as the frame; raw JSON (jsontext.Value,
// json.RawMessage) is sent as is, and nil params as the protocol's null body. A notification returns once
// written.
//
// A request waits for its reply: a peer's error reply is returned as an *Error, a reply that fails the
// protocol's gates as a *FrameError. If ctx ends first, Send stops waiting (a late reply is dropped),
// sends the protocol's cancel message for the request if it has one (CancelRule), and returns an error
// wrapping ctx.Err(). Once the connection has shut down, or the peer's input has ended, the error matches
// ErrClosed.
//
// Before returning, Send waits until every notification received ahead of the reply has been handled, so
// that progress notifications are observed before the final result. Sends made with a handler context of
// this connection skip that wait: they may come from the very handler it would wait for.
func (c *Conn) Send(ctx context.Context, m Outbound, result any) error {
	// The header lives in the pooled buffer: a *Header passed to the codec escapes (an allocation).
	b := getBuffer()
	defer putBuffer(b)
	h := &b.h
	*h = Header{Kind: m.Kind, Method: m.Method, Qualifier: m.Qualifier, ID: m.ID}
	switch h.Kind {
	case 0:
		h.Kind = KindRequest
	case KindRequest, KindNotification:
	default:
		return fmt.Errorf("rpc: send %s: cannot send a %s", m.Method, h.Kind)
	}
	if !utf8.ValidString(m.Method) || !utf8.ValidString(m.Qualifier) {
		// Codecs would replace the invalid bytes and send another method.
		return fmt.Errorf("rpc: send %q: method name is not valid UTF-8", m.Method)
	}
	if h.Kind == KindRequest {
		if c.opts.NextID != nil {
			h.Seq = c.opts.NextID()
		} else {
			h.Seq = c.seq.Add(1)
		}
	}
	body, err := c.encode(b, h, m.Params)
	if err != nil {
		return fmt.Errorf("rpc: send %s: %w", m.Method, err)
	}
	mark := c.mark(ctx)
	if h.Kind == KindNotification {
		if err := c.write(ctx, mark, b.B); err != nil {
			return fmt.Errorf("rpc: send %s: %w", m.Method, err)
		}
		return nil
	}
	if mark != nil {
		c.q.caller(1)
		defer c.q.caller(-1)
	}
	r, sent, err := c.roundTrip(ctx, mark, h, b.B)
	if err != nil {
		if sent && ctx.Err() != nil {
			// Only a request the peer may have received is cancelled: for a Key rule, another request
			// of the same key would be cancelled instead.
			c.cancelOutbound(h, b.B[body[0]:body[1]])
		}
		return fmt.Errorf("rpc: call %s: %w", m.Method, err)
	}
	if mark == nil {
		if err := c.q.waitHandled(ctx, r.seq); err != nil {
			return fmt.Errorf("rpc: call %s: %w", m.Method, err)
		}
	}
	if r.err != nil {
		return r.err
	}
	if result != nil && r.body != nil {
		if err := decodeInto(r.body, result, c.opts.DecodeOptions); err != nil {
			return fmt.Errorf("rpc: call %s: decode result: %w", m.Method, err)
		}
	}
	return nil
}

// roundTrip registers call h.Seq, writes its frame and waits for the reply. A non-nil error means the
// call was abandoned locally; sent reports whether its frame had been written.
func (c *Conn) roundTrip(ctx context.Context, mark *handlerMark, h *Header, frame []byte) (r callResult, sent bool, err error) {
	ch := c.replies.Get().(chan callResult)
	c.mu.Lock()
	if c.pending == nil {
		err := c.cause
		if err == nil {
			err = errNoInput
		}
		c.mu.Unlock()
		c.replies.Put(ch)
		return callResult{}, false, err
	}
	c.pending[h.Seq] = ch
	c.mu.Unlock()

	// The write fails with ctx's error only while the frame is unwritten.
	err = c.write(ctx, mark, frame)
	if err == nil {
		sent = true
		done := ctx.Done()
		if done == nil {
			r := <-ch
			c.replies.Put(ch)
			return r, true, nil
		}
		select {
		case r := <-ch:
			c.replies.Put(ch)
			return r, true, nil
		case <-done:
			err = ctx.Err()
		}
	}
	if c.retire(h.Seq) == nil {
		<-ch // the reply (or the shutdown's failure) is already on its way
	}
	c.replies.Put(ch)
	return callResult{}, sent, c.sendError(err)
}

// cancelTimeout bounds the sending of a cancel message.
const cancelTimeout = 5 * time.Second

// cancelOutbound sends, in the background, the protocol's cancel message for an abandoned request whose
// params were body.
func (c *Conn) cancelOutbound(h *Header, body []byte) {
	r, params := c.rules.target[h.Method], []byte(nil)
	switch {
	case r != nil && r.Key != "":
		v := Member(body, r.Key)
		if v == nil {
			return
		}
		params = appendObject(nil, r.Key, v)
	case r != nil:
		params = []byte("{}")
	case c.rules.anyID != nil:
		r = c.rules.anyID
		params = appendObject(nil, r.ByID, c.codec.AppendID(nil, h.Seq))
	default:
		return
	}
	kind := r.Kind
	if kind == 0 {
		kind = KindNotification
	}
	go func() {
		ctx, cancel := context.WithTimeout(c.ctx, cancelTimeout)
		defer cancel()
		err := c.Send(ctx, Outbound{Kind: kind, Method: r.Method, Params: jsontext.Value(params)}, nil)
		if err != nil {
			c.log.Debug("rpc: cancel message not sent", "method", r.Method, "err", err)
		}
	}()
}

// appendObject appends {"name":value}.
func appendObject(dst []byte, name string, value []byte) []byte {
	dst = append(dst, '{')
	dst, _ = jsontext.AppendQuote(dst, name)
	dst = append(dst, ':')
	dst = append(dst, value...)
	return append(dst, '}')
}

// buffer is a pooled encoding buffer with room for the header of the message it holds.
type buffer struct {
	B []byte
	h Header
	// w lends B to MarshalWrite, which appends straight into a bytes.Buffer's storage; to another writer
	// it would copy the value from a buffer of its own, dropped past 64 KiB (an allocation per value).
	w bytes.Buffer
}

var bufferPool = sync.Pool{New: func() any { return &buffer{B: make([]byte, 0, 1024)} }}

const maxPooledBuffer = 1 << 20

func getBuffer() *buffer { return bufferPool.Get().(*buffer) }

func putBuffer(b *buffer) {
	if cap(b.B) <= maxPooledBuffer {
		b.B, b.h = b.B[:0], Header{}
		bufferPool.Put(b)
	}
}

// preserve writes raw JSON values (inside generated types too) byte for byte, escapes included.
var preserve = jsontext.PreserveRawStrings(true)

// encode appends the frame for h with body v to b in one pass and returns where the body lies in it.
func (c *Conn) encode(b *buffer, h *Header, v any) (body [2]int, err error) {
	b.B = c.codec.AppendHead(b.B, h)
	start := len(b.B)
	if raw, ok := rawJSON(v); ok {
		err = appendRaw(b, raw)
	} else if v != nil {
		b.w = *bytes.NewBuffer(b.B)
		err = json.MarshalWrite(&b.w, v, preserve)
		b.B, b.w = b.w.Bytes(), bytes.Buffer{}
	}
	if err != nil {
		b.B = b.B[:0]
		return body, err
	}
	if out := b.B[start:]; len(out) == 0 || string(out) == "null" {
		b.B = append(b.B[:start], c.codec.NullBody(h)...)
	}
	body = [2]int{start, len(b.B)}
	b.B = c.codec.AppendTail(b.B, h)
	return body, nil
}

// rawOptions accept what a peer may legitimately have sent, so that raw values can be forwarded.
var rawOptions = []jsontext.Options{jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true)}

var errInvalidRaw = errors.New("rpc: invalid raw JSON value")

// appendRaw appends a raw JSON value, compacted if it spans several lines.
func appendRaw(b *buffer, raw []byte) error {
	if len(raw) == 0 {
		return nil
	}
	if bytes.IndexByte(raw, '\n') < 0 {
		if !jsontext.Value(raw).IsValid(rawOptions...) {
			return errInvalidRaw
		}
		b.B = append(b.B, raw...)
		return nil
	}
	out, err := jsontext.AppendFormat(b.B, raw, rawOptions...)
	if err != nil {
		return err
	}
	b.B = out
	return nil
}

func rawJSON(v any) ([]byte, bool) {
	if raw, ok := v.(jsontext.Value); ok {
		return raw, true
	}
	// A distinct type unless built with GOEXPERIMENT=jsonv2.
	if raw, ok := v.(stdjson.RawMessage); ok {
		return raw, true
	}
	return nil, false
}
