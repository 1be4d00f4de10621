package tracelog

import (
	"math"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/frames"
)

// appendJSON appends r encoded as encoding/json encodes a Record (members
// in field order, omitempty, HTML-safe string escaping, RFC 3339 times,
// floats formatted alike), without reflection. ok is false, with dst
// with dst's length, for what it leaves to encoding/json: a time
// outside years 0-9999 or not in UTC, a latency that is not finite, an id
// that is not a plain number or string. FuzzMarshal checks it against
// encoding/json.
func (r *Record) appendJSON(dst []byte) (_ []byte, ok bool) {
	start := len(dst)
	defer func() {
		if !ok {
			dst = dst[:start]
		}
	}()
	b := append(dst, `{"type":`...)
	b = appendString(b, r.Type)
	b = append(b, `,"session":`...)
	b = appendString(b, r.Session)
	b = append(b, `,"seq":`...)
	b = strconv.AppendInt(b, r.Seq, 10)
	b = append(b, `,"time":`...)
	if b, ok = appendTime(b, r.Time); !ok {
		return dst, false
	}
	if r.Version != 0 {
		b = append(b, `,"v":`...)
		b = strconv.AppendInt(b, int64(r.Version), 10)
	}
	if len(r.Command) > 0 {
		b = append(b, `,"command":[`...)
		for i, c := range r.Command {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, c)
		}
		b = append(b, ']')
	}
	b = appendStringMember(b, `,"dir":`, string(r.Dir))
	if r.Size != 0 {
		b = append(b, `,"size":`...)
		b = strconv.AppendInt(b, int64(r.Size), 10)
	}
	if r.Raw != nil {
		b = append(b, `,"raw":`...)
		b = appendString(b, *r.Raw)
	}
	b = appendStringMember(b, `,"raw_base64":`, r.RawBase64)
	b = appendTrue(b, `,"redacted":true`, r.Redacted)
	b = appendTrue(b, `,"truncated":true`, r.Truncated)
	b = appendTrue(b, `,"partial":true`, r.Partial)
	b = appendStringMember(b, `,"family":`, string(r.Family))
	b = appendStringMember(b, `,"kind":`, string(r.Kind))
	b = appendStringMember(b, `,"method":`, r.Method)
	b = appendStringMember(b, `,"qualifier":`, r.Qualifier)
	if len(r.ID) > 0 {
		if !plainID(r.ID) {
			return dst, false
		}
		b = append(b, `,"id":`...)
		b = append(b, r.ID...)
	}
	if r.ReplyTo != 0 {
		b = append(b, `,"reply_to":`...)
		b = strconv.AppendInt(b, r.ReplyTo, 10)
	}
	if r.LatencyUS != nil {
		b = append(b, `,"latency_us":`...)
		if b, ok = appendFloat(b, *r.LatencyUS); !ok {
			return dst, false
		}
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
	b = appendStringMember(b, `,"signal":`, r.Signal)
	if len(r.Unanswered) > 0 {
		b = append(b, `,"unanswered":[`...)
		for i, p := range r.Unanswered {
			if i > 0 {
				b = append(b, ',')
			}
			if b, ok = appendPending(b, p); !ok {
				return dst, false
			}
		}
		b = append(b, ']')
	}
	return append(b, '}'), true
}

func appendStringMember(b []byte, name, v string) []byte {
	if v == "" {
		return b
	}
	return appendString(append(b, name...), v)
}

func appendTrue(b []byte, member string, v bool) []byte {
	if v {
		return append(b, member...)
	}
	return b
}

func appendProblem(b []byte, p frames.Problem) []byte {
	b = append(b, `{"code":`...)
	b = appendString(b, p.Code)
	b = appendStringMember(b, `,"pointer":`, p.Pointer)
	b = append(b, `,"message":`...)
	b = appendString(b, p.Message)
	return append(b, '}')
}

func appendPending(b []byte, p frames.Pending) ([]byte, bool) {
	b = append(b, `{"seq":`...)
	b = strconv.AppendInt(b, p.Seq, 10)
	b = append(b, `,"dir":`...)
	b = appendString(b, string(p.Dir))
	b = append(b, `,"method":`...)
	b = appendString(b, p.Method)
	b = append(b, `,"id":`...)
	b = appendString(b, p.ID)
	b = append(b, `,"time":`...)
	b, ok := appendTime(b, p.At)
	return append(b, '}'), ok
}

// appendTime is time.Time's MarshalJSON for a UTC time of years 0-9999
// (which RFC 3339 formatting cannot get wrong).
func appendTime(b []byte, t time.Time) ([]byte, bool) {
	if _, off := t.Zone(); off != 0 || t.Year() < 0 || t.Year() > 9999 {
		return b, false
	}
	b = append(b, '"')
	b = t.AppendFormat(b, time.RFC3339Nano)
	return append(b, '"'), true
}

// appendFloat is encoding/json's float64 encoding.
func appendFloat(b []byte, f float64) ([]byte, bool) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return b, false
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// clean up e-09 to e-9
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b, true
}

// plainID reports whether id is what encoding/json copies through as it
// is: an integer, or a string of printable ASCII that needs no escaping
// (no quote, backslash or HTML character inside).
func plainID(id []byte) bool {
	if id[0] == '"' {
		if len(id) < 2 || id[len(id)-1] != '"' {
			return false
		}
		for _, c := range id[1 : len(id)-1] {
			if c < 0x20 || c >= utf8.RuneSelf || !htmlSafe(c) {
				return false
			}
		}
		return true
	}
	i := 0
	if id[0] == '-' {
		i++
	}
	if i == len(id) || id[i] == '0' && len(id) > i+1 {
		return false
	}
	for _, c := range id[i:] {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

func htmlSafe(c byte) bool {
	return c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
}

const hex = "0123456789abcdef"

// appendString is encoding/json's string encoding with HTML escaping:
// ", \ and control characters escaped (\b \f \n \r \t by name), <, > and
// & as \u003c..., invalid UTF-8 as \ufffd, U+2028 and U+2029 escaped.
func appendString(dst []byte, src string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(src); {
		if c := src[i]; c < utf8.RuneSelf {
			if htmlSafe(c) {
				i++
				continue
			}
			dst = append(dst, src[start:i]...)
			switch c {
			case '\\', '"':
				dst = append(dst, '\\', c)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(src[i:])
		if c == utf8.RuneError && size == 1 {
			dst = append(dst, src[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if c == '\u2028' || c == '\u2029' {
			dst = append(dst, src[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[c&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, src[start:]...)
	return append(dst, '"')
}
