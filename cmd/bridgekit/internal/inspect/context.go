package inspect

import (
	"slices"

	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/frames"
	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/tracelog"
)

// A Summarizer describes a session's initialize (its request, its reply
// and the replies of the sessions it opened, any of them nil), as `bridgekit
// probe` prints what it found; "" when it has nothing to say.
type Summarizer func(family frames.Family, initialize, reply *tracelog.Record, sessions []*tracelog.Record) string

// Context is what the inspector's Context view shows of a session.
type Context struct {
	// Initialize is the summary of initialize; InitializeSeq the seq of
	// its reply (0 when it was never answered).
	Initialize    string `json:"initialize"`
	InitializeSeq int64  `json:"initializeSeq,omitempty"`
	// Latency lists, per method and direction, the latencies of the
	// requests answered.
	Latency []MethodLatency `json:"latency"`
	// Stderr counts the lines the traced command wrote on stderr.
	Stderr int `json:"stderr"`
}

// MethodLatency is the latency of the answered requests of one method in
// one direction: percentiles by the nearest-rank method.
type MethodLatency struct {
	Method string           `json:"method"`
	Dir    frames.Direction `json:"dir"` // the request's
	Count  int              `json:"count"`
	Errors int              `json:"errors"` // error replies among them
	// Unanswered counts the requests never answered (not in the
	// percentiles).
	Unanswered int     `json:"unanswered"`
	P50US      float64 `json:"p50_us"`
	P99US      float64 `json:"p99_us"`
	MaxUS      float64 `json:"max_us"`
}

// Percentile returns the p-th percentile (0 < p <= 100) of sorted, by the
// nearest-rank method: the smallest value at or above p percent of them.
func Percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(p/100*float64(len(sorted)) + 0.999999999)
	return sorted[min(max(rank, 1), len(sorted))-1]
}

// Latencies returns the per-method latencies of a session's records,
// sorted by method then direction.
func Latencies(recs []*tracelog.Record) []MethodLatency {
	type key struct {
		method string
		dir    frames.Direction
	}
	type acc struct {
		us               []float64
		errors, requests int
	}
	m := map[key]*acc{}
	get := func(k key) *acc {
		a := m[k]
		if a == nil {
			a = &acc{}
			m[k] = a
		}
		return a
	}
	for _, r := range recs {
		if r.Type != tracelog.TypeFrame {
			continue
		}
		switch {
		case r.Kind == frames.Request:
			get(key{r.Method, r.Dir}).requests++
		case r.ReplyTo != 0 && r.LatencyUS != nil:
			a := get(key{r.Method, r.Dir.Opposite()})
			a.us = append(a.us, *r.LatencyUS)
			if r.Kind == frames.Error {
				a.errors++
			}
		}
	}
	out := make([]MethodLatency, 0, len(m))
	for k, a := range m {
		slices.Sort(a.us)
		ml := MethodLatency{Method: k.method, Dir: k.dir, Count: len(a.us), Errors: a.errors, Unanswered: max(a.requests-len(a.us), 0)}
		if len(a.us) > 0 {
			ml.P50US, ml.P99US, ml.MaxUS = Percentile(a.us, 50), Percentile(a.us, 99), a.us[len(a.us)-1]
		}
		out = append(out, ml)
	}
	slices.SortFunc(out, func(a, b MethodLatency) int {
		if a.Method != b.Method {
			if a.Method < b.Method {
				return -1
			}
			return 1
		}
		if a.Dir < b.Dir {
			return -1
		}
		if a.Dir > b.Dir {
			return 1
		}
		return 0
	})
	return out
}

// SessionContext builds a session's Context, summarizing initialize with
// sum (nil: no summary).
func SessionContext(recs []*tracelog.Record, sum Summarizer) *Context {
	c := &Context{Latency: Latencies(recs)}
	var init, reply *tracelog.Record
	var family frames.Family
	newReqs := map[int64]bool{}
	var sessions []*tracelog.Record
	for _, r := range recs {
		switch r.Type {
		case tracelog.TypeStderr:
			c.Stderr++
		case tracelog.TypeFrame:
			if r.Family != "" {
				family = r.Family
			}
			switch {
			case r.Kind == frames.Request && r.Method == "initialize" && init == nil:
				init = r
			case r.Kind == frames.Request && r.Method == "session/new":
				newReqs[r.Seq] = true
			case init != nil && reply == nil && r.ReplyTo == init.Seq:
				reply = r
			case r.ReplyTo != 0 && newReqs[r.ReplyTo]:
				sessions = append(sessions, r)
			}
		}
	}
	if reply != nil {
		c.InitializeSeq = reply.Seq
	}
	if sum != nil && init != nil {
		c.Initialize = sum(family, init, reply, sessions)
	}
	return c
}
