package jsonrpc

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/bridgekit/bridgekit/runtime/ndjson"
	"github.com/go-json-experiment/json/jsontext"
)

// read is the read goroutine. It routes responses to their callers, queues
// everything else for the dispatcher and, once reading ends, waits for the
// other goroutines before closing done.
func (c *Conn) read() {
	defer close(c.done)
	for c.q.waitSpace() {
		frame, err := c.fr.ReadFrame()
		if err == nil {
			c.handleFrame(frame)
			continue
		}
		if tooLarge, ok := errors.AsType[*ndjson.FrameTooLargeError](err); ok {
			msg := "invalid request: frame exceeds the " + strconv.Itoa(tooLarge.Limit) + "-byte limit"
			c.reject(ID{}, &Error{Code: CodeInvalidRequest, Message: msg}, FrameTooLarge, err, nil)
			continue
		}
		c.shutdown(fmt.Errorf("%w: %w", ErrClosed, err))
		c.q.close(false) // still deliver the notifications already received
		break
	}
	c.wg.Wait()
}

// handleFrame classifies one inbound message. frame is only valid during the
// call, so whatever outlives it is copied.
func (c *Conn) handleFrame(frame []byte) {
	e := &c.env
	if err := c.decodeEnvelope(frame); err != nil {
		c.reject(ID{}, ErrParse, FrameMalformed, err, frame)
		return
	}
	switch {
	case e.method != nil:
		c.queueRequest(e, frame)
	case e.id != nil && (e.result != nil || e.err != nil):
		c.deliver(e, frame)
	default:
		id, _ := requestID(e.id)
		c.rejectInvalid(id, "not a request, notification or response", frame)
	}
}

var errTrailingData = errors.New("jsonrpc: unexpected data after the message")

// decodeEnvelope scans frame into c.env, with the same checks as
// json.Unmarshal: one valid JSON value and nothing but whitespace after it.
// The fast scanner handles the common case; whatever it declines is decoded
// with the read goroutine's jsontext decoder.
func (c *Conn) decodeEnvelope(frame []byte) error {
	if c.scan.envelope(frame, &c.env) {
		return nil
	}
	return c.decodeEnvelopeJSON(frame)
}

// decodeEnvelopeJSON is decodeEnvelope without the fast scanner.
func (c *Conn) decodeEnvelopeJSON(frame []byte) error {
	c.decBuf = *bytes.NewBuffer(frame)
	c.dec.Reset(&c.decBuf)
	if err := c.env.UnmarshalJSONFrom(&c.dec); err != nil {
		return err
	}
	if _, err := c.dec.ReadToken(); err != io.EOF {
		if err == nil {
			err = errTrailingData
		}
		return err
	}
	return nil
}

func (c *Conn) queueRequest(e *envelope, frame []byte) {
	id, ok := requestID(e.id)
	if !ok {
		c.rejectInvalid(ID{}, "id must be a string, number or null", frame)
		return
	}
	if string(e.version) != `"2.0"` {
		c.rejectInvalid(id, `"jsonrpc" must be "2.0"`, frame)
		return
	}
	method, ok := c.methodName(e.method)
	if !ok {
		c.rejectInvalid(id, "method must be a string", frame)
		return
	}
	req := &Request{ID: id, Method: method, Params: bytes.Clone(e.params)}
	if !c.startNow(req) {
		c.q.push(inbound{req: req})
	}
}

// startNow starts a concurrent request straight from the read goroutine,
// sparing the hand-off through the dispatcher, when that changes nothing:
// the dispatcher has caught up (everything before this request has been
// handled or started) and a slot is free. It reports whether it did.
func (c *Conn) startNow(req *Request) bool {
	if c.sem == nil || req.IsNotification() || c.ctx.Err() != nil {
		return false
	}
	return c.q.whenCaughtUp(func() bool {
		select {
		case c.sem <- struct{}{}:
			c.start(req)
			return true
		default:
			return false
		}
	})
}

// maxInternedMethods bounds the method names a connection interns.
const maxInternedMethods = 64

// methodName is methodName, interning the names the read goroutine sees so
// that a request's Method costs no allocation once its name is known. A
// peer can only ever make it intern maxInternedMethods names.
func (c *Conn) methodName(raw jsontext.Value) (string, bool) {
	if name, ok := c.methods[string(raw)]; ok {
		return name, true
	}
	name, ok := methodName(raw)
	if ok && len(c.methods) < maxInternedMethods {
		if c.methods == nil {
			c.methods = make(map[string]string)
		}
		c.methods[string(raw)] = name
	}
	return name, ok
}

// deliver hands a response to the call waiting for it.
func (c *Conn) deliver(e *envelope, frame []byte) {
	ch := c.take(e.id)
	if ch == nil {
		if c.Err() == nil {
			c.frameError(newFrameError(FrameUnknownResponse, fmt.Errorf("jsonrpc: no pending call with id %s", e.id), frame))
		}
		return
	}
	r := callResult{seq: c.q.notifications()}
	if e.err != nil && string(e.err) != "null" {
		r.err = decodeError(e.err)
	} else {
		r.result = bytes.Clone(e.result)
	}
	ch <- r
}

func (c *Conn) rejectInvalid(id ID, why string, frame []byte) {
	e := &Error{Code: CodeInvalidRequest, Message: "invalid request: " + why}
	c.reject(id, e, FrameInvalidEnvelope, e, frame)
}

// reject reports a bad frame and queues an error reply for it.
func (c *Conn) reject(id ID, e *Error, kind FrameErrorKind, cause error, frame []byte) {
	c.frameError(newFrameError(kind, cause, frame))
	c.q.push(inbound{id: id, reject: e})
}

func (c *Conn) frameError(fe *FrameError) {
	c.log.Warn("jsonrpc: bad inbound frame", "kind", fe.Kind.String(), "err", fe.Err, "snippet", fe.Snippet)
	if c.onFrameError != nil {
		c.onFrameError(fe)
	}
}
