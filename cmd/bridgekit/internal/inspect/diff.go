package inspect

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/bindrules"
	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/frames"
	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/tracelog"
)

// What a diff row says of its frames.
const (
	OpSame    = "="
	OpChanged = "~"
	OpOnlyA   = "-"
	OpOnlyB   = "+"
)

// A FrameRef names a frame of a diff.
type FrameRef struct {
	Seq    int64            `json:"seq"`
	Dir    frames.Direction `json:"dir"`
	Kind   frames.Kind      `json:"kind"`
	Method string           `json:"method,omitempty"`
	// Update is a session/update's sessionUpdate.
	Update string          `json:"update,omitempty"`
	ID     json.RawMessage `json:"id,omitempty"`
}

// A DiffPoint is one place where two matched frames differ.
type DiffPoint struct {
	Pointer string `json:"pointer"`
	// A and B are the values (JSON, cut to MaxDiffValue bytes); one is
	// absent when the member is only on the other side.
	A       string `json:"a,omitempty"`
	B       string `json:"b,omitempty"`
	Message string `json:"message,omitempty"`
}

// A DiffRow is one row of a diff: two matched frames, or a frame of one
// session only.
type DiffRow struct {
	Op          string      `json:"op"`
	A           *FrameRef   `json:"a,omitempty"`
	B           *FrameRef   `json:"b,omitempty"`
	Differences []DiffPoint `json:"differences,omitempty"`
}

// A DiffResult is the diff of session A with session B.
type DiffResult struct {
	A       string    `json:"a"`
	B       string    `json:"b"`
	Rules   []string  `json:"rules"`
	Rows    []DiffRow `json:"rows"`
	Changes int       `json:"changes"` // rows that are not OpSame
	// Bound lists the values of A that stand for values of B (ids,
	// UUIDs, the members the bind rules name), which are no difference.
	Bound []bindrules.Binding `json:"bound"`
}

// MaxDiffValue bounds a value a DiffPoint quotes.
const MaxDiffValue = 300

// MaxDiffPoints bounds the points a row lists (the rest are counted in
// its last point's message).
const MaxDiffPoints = 50

// maxDiffCells bounds the work of aligning two sessions: the product of
// their frame counts once the frames they start and end alike with are
// set aside.
const maxDiffCells = 1 << 28

// ErrDiffTooLarge is returned for two sessions too long to align.
var ErrDiffTooLarge = errors.New("the sessions are too long to diff")

// Diff compares the frames of session a with those of session b under
// rules, as replay compares a recording with a live run: frames are
// aligned by direction, kind, method and update type (the longest common
// subsequence), and two aligned frames are compared member by member.
// Values the rules bind (session, tool call and terminal ids, UUIDs), and
// the frames' own JSON-RPC ids, are bound the first time they are met, a
// value of a to the value of b at the same place; from then on they must
// correspond, so ids that differ consistently are no difference and ids
// that are mixed up are.
func Diff(aID string, a []*tracelog.Record, bID string, b []*tracelog.Record, rules []bindrules.Rule) (*DiffResult, error) {
	rs := bindrules.NewSet(rules)
	rs.Sides("A", "B")
	ids := &idBinder{ab: map[string]string{}, ba: map[string]string{}}
	fa, fb := diffFrames(a), diffFrames(b)
	res := &DiffResult{A: aID, B: bID, Rules: rs.Strings(), Rows: []DiffRow{}}
	if res.Rules == nil {
		res.Rules = []string{}
	}
	pairs, err := align(fa, fb)
	if err != nil {
		return nil, err
	}
	slide(pairs, fa, fb, rs)
	i, j := 0, 0
	emit := func(row DiffRow) {
		if row.Op != OpSame {
			res.Changes++
		}
		res.Rows = append(res.Rows, row)
	}
	for _, p := range append(pairs, [2]int{len(fa), len(fb)}) {
		for ; i < p[0]; i++ {
			emit(DiffRow{Op: OpOnlyA, A: fa[i].ref})
		}
		for ; j < p[1]; j++ {
			emit(DiffRow{Op: OpOnlyB, B: fb[j].ref})
		}
		if p[0] == len(fa) && p[1] == len(fb) {
			break
		}
		row := DiffRow{Op: OpSame, A: fa[i].ref, B: fb[j].ref}
		row.Differences = compareFrames(rs, ids, fa[i], fb[j])
		if len(row.Differences) > 0 {
			row.Op = OpChanged
		}
		emit(row)
		i, j = i+1, j+1
	}
	for _, b := range append(ids.bound, rs.Bindings()...) {
		if b.Recorded != b.Live {
			res.Bound = append(res.Bound, b)
		}
	}
	if res.Bound == nil {
		res.Bound = []bindrules.Binding{}
	}
	return res, nil
}

type diffFrame struct {
	ref   *FrameRef
	rec   *tracelog.Record
	shape string
	doc   any
	err   error
	canon *string // see canonical
}

// canonical returns f's frame as compact JSON with its id, the members
// rules ignore and the values they bind or take for equal (times) left
// out: two frames with the same canonical form are alike but for what the
// rules see through.
func (f *diffFrame) canonical(rs *bindrules.Set) string {
	if f.canon != nil {
		return *f.canon
	}
	var c string
	if f.err != nil || f.rec.Truncated {
		c = "raw:" + string(f.rec.Line())
	} else {
		doc := f.doc
		if m, ok := doc.(map[string]any); ok {
			doc = without(m, "id")
		}
		b, _ := json.Marshal(canonValue(rs, f.rec.Method, nil, doc))
		c = string(b)
	}
	f.canon = &c
	return c
}

func canonValue(rs *bindrules.Set, method string, path []string, v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, sub := range x {
			p := append(path[:len(path):len(path)], k)
			if !rs.Ignored(method, p) {
				out[k] = canonValue(rs, method, p, sub)
			}
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, sub := range x {
			out[i] = canonValue(rs, method, append(path[:len(path):len(path)], fmt.Sprint(i)), sub)
		}
		return out
	case string:
		if rs.Binds(method, path, x) || rs.Times && bindrules.IsTime(x) {
			return "\x00bound"
		}
	}
	return v
}

// slide improves an alignment where the longest common subsequence of
// shapes chose, among frames of one shape next to a gap, one that differs
// when another is alike: a frame sent once more on one side (a second
// status notification) then matches its like, and the extra one is the
// one shown alone.
func slide(pairs [][2]int, a, b []*diffFrame, rs *bindrules.Set) {
	for p := range pairs {
		i, j := pairs[p][0], pairs[p][1]
		if a[i].canonical(rs) == b[j].canonical(rs) {
			continue
		}
		// The free frames around the pair: between its neighbours.
		loA, loB, hiA, hiB := 0, 0, len(a), len(b)
		if p > 0 {
			loA, loB = pairs[p-1][0]+1, pairs[p-1][1]+1
		}
		if p+1 < len(pairs) {
			hiA, hiB = pairs[p+1][0], pairs[p+1][1]
		}
		if k := alike(b, loB, hiB, b[j].shape, a[i].canonical(rs), rs); k >= 0 {
			pairs[p][1] = k
			continue
		}
		if k := alike(a, loA, hiA, a[i].shape, b[j].canonical(rs), rs); k >= 0 {
			pairs[p][0] = k
		}
	}
}

// alike returns the index in fs[lo:hi] of a frame of shape whose
// canonical form is canon, or -1.
func alike(fs []*diffFrame, lo, hi int, shape, canon string, rs *bindrules.Set) int {
	for k := lo; k < hi; k++ {
		if fs[k].shape == shape && fs[k].canonical(rs) == canon {
			return k
		}
	}
	return -1
}

func diffFrames(recs []*tracelog.Record) []*diffFrame {
	var out []*diffFrame
	for _, r := range recs {
		if r.Type != tracelog.TypeFrame {
			continue
		}
		f := &diffFrame{rec: r, ref: &FrameRef{Seq: r.Seq, Dir: r.Dir, Kind: r.Kind, Method: r.Method, ID: r.ID}}
		if !r.Truncated {
			f.doc, f.err = bindrules.Decode(r.Line())
		}
		f.ref.Update = updateType(f.doc)
		f.shape = string(r.Dir) + " " + string(r.Kind) + " " + r.Method + " " + r.Qualifier + " " + f.ref.Update
		out = append(out, f)
	}
	return out
}

// updateType returns an ACP session/update's sessionUpdate, or "".
func updateType(doc any) string {
	m, _ := doc.(map[string]any)
	p, _ := m["params"].(map[string]any)
	u, _ := p["update"].(map[string]any)
	s, _ := u["sessionUpdate"].(string)
	return s
}

// compareFrames lists where b differs from a.
func compareFrames(rs *bindrules.Set, ids *idBinder, a, b *diffFrame) []DiffPoint {
	if a.rec.Truncated || b.rec.Truncated {
		if a.rec.Truncated && b.rec.Truncated && bytes.Equal(a.rec.Line(), b.rec.Line()) {
			return nil
		}
		return []DiffPoint{{Message: "recorded truncated: only the start of the frame was kept"}}
	}
	if a.err != nil || b.err != nil {
		if bytes.Equal(a.rec.Line(), b.rec.Line()) {
			return nil
		}
		return []DiffPoint{{A: cut(a.rec.Line()), B: cut(b.rec.Line()), Message: "not JSON"}}
	}
	var out []DiffPoint
	dropped := 0
	add := func(p DiffPoint) {
		if len(out) >= MaxDiffPoints {
			dropped++
			return
		}
		out = append(out, p)
	}
	da, db := a.doc, b.doc
	// The frames' own ids are their senders' to choose: bound, as the
	// rules bind values.
	if ma, ok := da.(map[string]any); ok {
		if mb, ok := db.(map[string]any); ok {
			ia, okA := ma["id"]
			ib, okB := mb["id"]
			if okA && okB {
				ja, _ := json.Marshal(ia)
				jb, _ := json.Marshal(ib)
				if msg := ids.bind(requester(a.rec), string(ja), string(jb)); msg != "" {
					add(DiffPoint{Pointer: "/id", A: string(ja), B: string(jb), Message: msg})
				}
				da, db = without(ma, "id"), without(mb, "id")
			}
		}
	}
	rs.Compare(a.rec.Method, nil, da, db, func(d bindrules.Difference) {
		p := DiffPoint{Pointer: bindrules.Pointer(d.Path), Message: d.Message}
		switch d.Kind {
		case bindrules.Missing:
			p.A, p.Message = quote(d.Recorded), "only in A"
		case bindrules.Extra:
			p.B, p.Message = quote(d.Live), "only in B"
		default:
			p.A, p.B = quote(d.Recorded), quote(d.Live)
		}
		add(p)
	})
	if dropped > 0 {
		out[len(out)-1].Message += fmt.Sprintf(" (and %d more differences)", dropped)
	}
	return out
}

// idBinder binds the JSON-RPC ids of A's requests to B's, per side that
// chose them (each side numbers its own requests).
type idBinder struct {
	ab, ba map[string]string // side+" "+id -> id
	bound  []bindrules.Binding
}

func (ib *idBinder) bind(side frames.Direction, a, b string) string {
	ka, kb := string(side)+" "+a, string(side)+" "+b
	if was, ok := ib.ab[ka]; ok {
		if was != b {
			return fmt.Sprintf("A's id %s stands for B's id %s, got %s", a, was, b)
		}
		return ""
	}
	if was, ok := ib.ba[kb]; ok {
		return fmt.Sprintf("B's id %s already stands for A's id %s, not %s", b, was, a)
	}
	ib.ab[ka], ib.ba[kb] = b, a
	ib.bound = append(ib.bound, bindrules.Binding{Recorded: a, Live: b})
	return ""
}

// requester returns the direction of the request a frame is or answers.
func requester(r *tracelog.Record) frames.Direction {
	if r.Kind == frames.Request || r.Kind == frames.Notification {
		return r.Dir
	}
	return r.Dir.Opposite()
}

func without(m map[string]any, key string) map[string]any {
	c := make(map[string]any, len(m))
	for k, v := range m {
		if k != key {
			c[k] = v
		}
	}
	return c
}

func quote(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return cut(b)
}

func cut(b []byte) string {
	if len(b) > MaxDiffValue {
		return string(b[:MaxDiffValue]) + "…"
	}
	return string(b)
}

// align returns the index pairs of a longest common subsequence of the
// frames' shapes, in order. The frames both sessions start and end with
// alike are matched first; the rest is aligned by Hirschberg's algorithm,
// in space linear in the sessions' lengths.
func align(a, b []*diffFrame) ([][2]int, error) {
	intern := map[string]int{}
	sym := func(fs []*diffFrame) []int {
		out := make([]int, len(fs))
		for i, f := range fs {
			n, ok := intern[f.shape]
			if !ok {
				n = len(intern)
				intern[f.shape] = n
			}
			out[i] = n
		}
		return out
	}
	x, y := sym(a), sym(b)
	var pairs [][2]int
	pre := 0
	for pre < len(x) && pre < len(y) && x[pre] == y[pre] {
		pairs = append(pairs, [2]int{pre, pre})
		pre++
	}
	suf := 0
	for suf < len(x)-pre && suf < len(y)-pre && x[len(x)-1-suf] == y[len(y)-1-suf] {
		suf++
	}
	mx, my := x[pre:len(x)-suf], y[pre:len(y)-suf]
	if len(mx)*len(my) > maxDiffCells {
		return nil, fmt.Errorf("%w: %d×%d frames differ in shape", ErrDiffTooLarge, len(mx), len(my))
	}
	hirschberg(mx, my, pre, pre, &pairs)
	for k := suf; k > 0; k-- {
		pairs = append(pairs, [2]int{len(x) - k, len(y) - k})
	}
	return pairs, nil
}

func hirschberg(x, y []int, xo, yo int, out *[][2]int) {
	if len(x) == 0 || len(y) == 0 {
		return
	}
	if len(x) == 1 {
		for j, v := range y {
			if v == x[0] {
				*out = append(*out, [2]int{xo, yo + j})
				return
			}
		}
		return
	}
	mid := len(x) / 2
	fwd := lcsRow(x[:mid], y, false)
	bwd := lcsRow(x[mid:], y, true)
	best, k := -1, 0
	for j := 0; j <= len(y); j++ {
		if s := fwd[j] + bwd[len(y)-j]; s > best {
			best, k = s, j
		}
	}
	hirschberg(x[:mid], y[:k], xo, yo, out)
	hirschberg(x[mid:], y[k:], xo+mid, yo+k, out)
}

// lcsRow returns, for each j, the length of the longest common
// subsequence of x and y's first j items (reversed: of x and y read from
// their ends, y's last j items).
func lcsRow(x, y []int, reversed bool) []int {
	prev := make([]int, len(y)+1)
	cur := make([]int, len(y)+1)
	at := func(s []int, i int) int {
		if reversed {
			return s[len(s)-1-i]
		}
		return s[i]
	}
	for i := range x {
		xi := at(x, i)
		for j := range y {
			if xi == at(y, j) {
				cur[j+1] = prev[j] + 1
			} else {
				cur[j+1] = max(prev[j+1], cur[j])
			}
		}
		prev, cur = cur, prev
	}
	return prev
}

// LoadSession reads every record of a session from src.
func LoadSession(ctx context.Context, src Source, id string) ([]*tracelog.Record, error) {
	var out []*tracelog.Record
	var after int64
	for {
		page, err := src.Records(ctx, id, after, MaxPage)
		if err != nil {
			return nil, err
		}
		if len(page) == 0 {
			return out, nil
		}
		out = append(out, page...)
		after = page[len(page)-1].Seq
		if len(page) < MaxPage {
			return out, nil
		}
	}
}
