package tracelog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/frames"
)

// Marshal appends r as one JSON line to dst: the members of Record's json
// tags, in their order, with their omitempty rules, as encoding/json would
// write them (FuzzMarshal checks that both read back alike). It is written
// by hand because trace encodes a record for every frame it forwards.
func (r *Record) Marshal(dst []byte) ([]byte, error) {
	if err := checkTime(r.Time); err != nil {
		return dst, err
	}
	for _, p := range r.Unanswered {
		if err := checkTime(p.At); err != nil {
			return dst, err
		}
	}
	if r.LatencyUS != nil && (math.IsNaN(*r.LatencyUS) || math.IsInf(*r.LatencyUS, 0)) {
		return dst, errors.New("tracelog: latency is not a finite number")
	}
	id := bytes.TrimSpace(r.ID)
	// Valid as encoding/json judges it (SetFrame does too), which lets
	// invalid UTF-8 through in a string, as a reader of it does.
	if len(id) > 0 && !json.Valid(id) {
		return dst, errors.New("tracelog: id is not JSON")
	}
	b := append(dst, `{"type":`...)
	b = quote(b, r.Type)
	b = append(b, `,"session":`...)
	b = quote(b, r.Session)
	b = append(b, `,"seq":`...)
	b = strconv.AppendInt(b, r.Seq, 10)
	b = append(b, `,"time":`...)
	b = appendTime(b, r.Time)
	b = intMember(b, "v", int64(r.Version))
	b = list(b, "command", r.Command, quote)
	b = member(b, "dir", string(r.Dir))
	b = intMember(b, "size", int64(r.Size))
	if r.Raw != nil {
		b = append(b, `,"raw":`...)
		b = quote(b, *r.Raw)
	}
	b = member(b, "raw_base64", r.RawBase64)
	b = flag(b, "redacted", r.Redacted)
	b = flag(b, "truncated", r.Truncated)
	b = flag(b, "partial", r.Partial)
	b = member(b, "family", string(r.Family))
	b = member(b, "kind", string(r.Kind))
	b = member(b, "method", r.Method)
	b = member(b, "qualifier", r.Qualifier)
	if len(id) > 0 {
		b = append(b, `,"id":`...)
		b = append(b, id...)
	}
	b = intMember(b, "reply_to", r.ReplyTo)
	if r.LatencyUS != nil {
		b = append(b, `,"latency_us":`...)
		b = appendFloat(b, *r.LatencyUS)
	}
	b = list(b, "problems", r.Problems, appendProblem)
	b = list(b, "notes", r.Notes, appendProblem)
	if r.Status != nil {
		b = append(b, `,"status":`...)
		b = strconv.AppendInt(b, int64(*r.Status), 10)
	}
	b = member(b, "signal", r.Signal)
	b = list(b, "unanswered", r.Unanswered, appendPending)
	if r.Unclean {
		b = append(b, `,"unclean":true`...)
	}
	return append(b, "}\n"...), nil
}

// quote appends s as a JSON string. Invalid UTF-8 becomes U+FFFD, as
// encoding/json writes it.
//
// A recorded line is JSON text, full of quotes: printable ASCII, the
// common case, is escaped here in one pass, which is several times
// faster than jsontext's per-escape path; a string with a control or
// non-ASCII byte is left to jsontext whole.
func quote(b []byte, s string) []byte {
	start := len(b)
	b = append(b, '"')
	last := 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			b = append(b, s[last:i]...)
			b = append(b, '\\', c)
			last = i + 1
		case c < 0x20 || c >= utf8.RuneSelf:
			b, _ = jsontext.AppendQuote(b[:start], s)
			return b
		}
	}
	b = append(b, s[last:]...)
	return append(b, '"')
}

// member appends a string member unless it is empty (omitempty).
func member(b []byte, name, v string) []byte {
	if v == "" {
		return b
	}
	b = key(b, name)
	return quote(b, v)
}

// key appends a member's name after a comma, and its colon.
func key(b []byte, name string) []byte {
	b = append(b, ',', '"')
	b = append(b, name...)
	return append(b, '"', ':')
}

// intMember appends an integer member unless it is 0 (omitempty).
func intMember(b []byte, name string, v int64) []byte {
	if v == 0 {
		return b
	}
	b = key(b, name)
	return strconv.AppendInt(b, v, 10)
}

// list appends an array member unless it is empty (omitempty), each
// element written by add.
func list[T any](b []byte, name string, items []T, add func([]byte, T) []byte) []byte {
	if len(items) == 0 {
		return b
	}
	b = append(key(b, name), '[')
	for i, it := range items {
		if i > 0 {
			b = append(b, ',')
		}
		b = add(b, it)
	}
	return append(b, ']')
}

// checkTime refuses a time RFC 3339 cannot write, as encoding/json does.
func checkTime(t time.Time) error {
	if y := t.Year(); y < 0 || y > 9999 {
		return fmt.Errorf("tracelog: time %v outside years 0-9999", t)
	}
	return nil
}

func flag(b []byte, name string, v bool) []byte {
	if !v {
		return b
	}
	return append(key(b, name), "true"...)
}

func appendTime(b []byte, t time.Time) []byte {
	b = append(b, '"')
	b = t.AppendFormat(b, time.RFC3339Nano)
	return append(b, '"')
}

// appendFloat writes f as encoding/json does: plain digits in [1e-6, 1e21),
// an exponent outside.
func appendFloat(b []byte, f float64) []byte {
	if a := math.Abs(f); a != 0 && (a < 1e-6 || a >= 1e21) {
		return strconv.AppendFloat(b, f, 'e', -1, 64)
	}
	return strconv.AppendFloat(b, f, 'f', -1, 64)
}

func appendProblem(b []byte, p frames.Problem) []byte {
	b = append(b, `{"code":`...)
	b = quote(b, p.Code)
	b = member(b, "pointer", p.Pointer)
	b = append(b, `,"message":`...)
	b = quote(b, p.Message)
	return append(b, '}')
}

func appendPending(b []byte, p frames.Pending) []byte {
	b = append(b, `{"seq":`...)
	b = strconv.AppendInt(b, p.Seq, 10)
	b = append(b, `,"dir":`...)
	b = quote(b, string(p.Dir))
	b = append(b, `,"method":`...)
	b = quote(b, p.Method)
	b = append(b, `,"id":`...)
	b = quote(b, p.ID)
	b = append(b, `,"time":`...)
	b = appendTime(b, p.At)
	return append(b, '}')
}
