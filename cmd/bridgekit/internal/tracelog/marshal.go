package tracelog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/frames"
)

// Marshal appends r as one JSON line to dst: the members of Record's json
// tags, in their order, with their omitempty rules, as encoding/json would
// write them (FuzzMarshal checks that both read back alike). It is written
// by hand because trace encodes a record for every frame it forwards.
func (r *Record) Marshal(dst []byte) ([]byte, error) {
	if y := r.Time.Year(); y < 0 || y > 9999 {
		return dst, fmt.Errorf("tracelog: time %v outside years 0-9999", r.Time)
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
	if r.Version != 0 {
		b = append(b, `,"v":`...)
		b = strconv.AppendInt(b, int64(r.Version), 10)
	}
	if len(r.Command) > 0 {
		b = append(b, `,"command":[`...)
		for i, a := range r.Command {
			if i > 0 {
				b = append(b, ',')
			}
			b = quote(b, a)
		}
		b = append(b, ']')
	}
	b = member(b, "dir", string(r.Dir))
	if r.Size != 0 {
		b = append(b, `,"size":`...)
		b = strconv.AppendInt(b, int64(r.Size), 10)
	}
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
	if r.ReplyTo != 0 {
		b = append(b, `,"reply_to":`...)
		b = strconv.AppendInt(b, r.ReplyTo, 10)
	}
	if r.LatencyUS != nil {
		b = append(b, `,"latency_us":`...)
		b = appendFloat(b, *r.LatencyUS)
	}
	if len(r.Problems) > 0 {
		b = append(b, `,"problems":[`...)
		for i, p := range r.Problems {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendProblem(b, p)
		}
		b = append(b, ']')
	}
	if r.Status != nil {
		b = append(b, `,"status":`...)
		b = strconv.AppendInt(b, int64(*r.Status), 10)
	}
	b = member(b, "signal", r.Signal)
	if len(r.Unanswered) > 0 {
		b = append(b, `,"unanswered":[`...)
		for i, p := range r.Unanswered {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = appendPending(b, p); err != nil {
				return dst, err
			}
		}
		b = append(b, ']')
	}
	return append(b, "}\n"...), nil
}

// quote appends s as a JSON string. Invalid UTF-8 becomes U+FFFD, as
// encoding/json writes it.
func quote(b []byte, s string) []byte {
	b, _ = jsontext.AppendQuote(b, s)
	return b
}

// member appends a string member unless it is empty (omitempty).
func member(b []byte, name, v string) []byte {
	if v == "" {
		return b
	}
	b = append(b, ',', '"')
	b = append(b, name...)
	b = append(b, '"', ':')
	return quote(b, v)
}

func flag(b []byte, name string, v bool) []byte {
	if !v {
		return b
	}
	b = append(b, ',', '"')
	b = append(b, name...)
	return append(b, `":true`...)
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

func appendPending(b []byte, p frames.Pending) ([]byte, error) {
	if y := p.At.Year(); y < 0 || y > 9999 {
		return b, fmt.Errorf("tracelog: time %v outside years 0-9999", p.At)
	}
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
	return append(b, '}'), nil
}
