package validate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/frames"
)

// Every method's params and result schema, in every spec validate judges
// by, is one the fast check evaluates (none is left to the slow path).
func TestFastCheckCoversTheSpec(t *testing.T) {
	n := 0
	for _, protocol := range []string{"acp", "acp-v0.12.2"} {
		v := newValidator(t, protocol)
		for k, ms := range v.methods {
			for _, loc := range []string{ms.Params, ms.Result} {
				if loc == "" {
					continue
				}
				for _, harn := range []bool{false, true} {
					c := v.schemaCheck(harn, v.retype(loc))
					if c.fails != nil {
						if protocol == "acp-v0.12.2" {
							continue // a method newer than v0.12.2
						}
						t.Errorf("%s %s: %s", k.pkg, loc, c.fails.Message)
						continue
					}
					if c.fast == nil {
						t.Errorf("%s %s (harn %v): not evaluated by the fast check", k.pkg, loc, harn)
					}
					n++
				}
			}
		}
	}
	if n < 100 {
		t.Errorf("only %d schemas checked", n)
	}
	// specschema's guarded unions (SessionUpdate's, ContentBlock's, ...)
	// are dispatched by their tag.
	fast.mu.Lock()
	unions := 0
	for _, n := range fast.nodes {
		if n.anyTags != nil || n.oneTags != nil {
			unions++
		}
	}
	fast.mu.Unlock()
	if unions < 5 {
		t.Errorf("%d unions dispatched by tag", unions)
	}
	t.Logf("%d schemas, %d unions dispatched by tag", n, unions)
}

// A body and the schema it is judged by.
type judged struct {
	what string
	loc  string
	body []byte
}

// trafficBodies returns the bodies of the recorded traffic with the
// locations of their schemas, as Stream finds them.
func trafficBodies(t *testing.T, v *Validator) []judged {
	t.Helper()
	var out []judged
	for _, s := range traffic(t) {
		cls := frames.New(frames.Unknown)
		st := &stream{}
		for i, line := range bytes.Split(bytes.TrimSpace(s), []byte("\n")) {
			frame, recv, _, ok := st.recording(line)
			if !ok {
				t.Fatalf("line %d: not a recording", i+1)
			}
			dir := frames.In
			if recv {
				dir = frames.Out
			}
			f := cls.Classify(int64(i+1), dir, time.Time{}, frame, false)
			if f.Body == nil || f.Method == "" {
				continue
			}
			m := frames.Lookup(f.Family, f.Method, f.Qualifier)
			if m == nil {
				continue
			}
			ms := v.methods[methodKey{packages[m.Family], m.Info.Go}]
			loc := ms.Params
			if f.Kind == frames.Response {
				loc = ms.Result
			}
			if loc != "" {
				out = append(out, judged{fmt.Sprintf("%s %s", f.Method, f.Kind), loc, bytes.Clone(f.Body)})
			}
		}
	}
	return out
}

// mutations returns variants of doc, each wrong or odd in one place: a
// member removed, a member added, a value of another kind, an empty or
// unknown string, a number out of range; at most max of them.
func mutations(doc any, max int) []any {
	var out []any
	var walk func(v any, set func(any))
	walk = func(v any, set func(any)) {
		if len(out) >= max {
			return
		}
		for _, alt := range alternatives(v) {
			set(alt)
			out = append(out, cloneJSON(doc))
			set(v)
		}
		switch x := v.(type) {
		case map[string]any:
			names := make([]string, 0, len(x))
			for k := range x {
				names = append(names, k)
			}
			slices.Sort(names)
			for _, k := range names {
				old := x[k]
				delete(x, k)
				out = append(out, cloneJSON(doc))
				x[k] = old
				walk(old, func(n any) { x[k] = n })
			}
			x["zzUnknownMember"] = json.Number("1")
			out = append(out, cloneJSON(doc))
			delete(x, "zzUnknownMember")
		case []any:
			for i := range x {
				walk(x[i], func(n any) { x[i] = n })
			}
			if len(x) > 0 {
				out = append(out, replaceIn(doc, x, []any{}))
			}
		}
	}
	walk(doc, func(n any) { doc = n })
	return out
}

func alternatives(v any) []any {
	switch x := v.(type) {
	case string:
		return []any{"", "zz_unknown_variant", json.Number("7"), nil, x + "é"}
	case json.Number:
		return []any{json.Number("-1"), json.Number("1.5"), json.Number("1e2"), json.Number("4294967296000"), "7", true}
	case bool:
		return []any{!x, nil, json.Number("0")}
	case nil:
		return []any{json.Number("0"), "x", map[string]any{}}
	case map[string]any:
		return []any{[]any{}, "x", nil}
	case []any:
		return []any{map[string]any{}, json.Number("1")}
	}
	return nil
}

// replaceIn returns a copy of doc in which the array old (by identity)
// is new.
func replaceIn(doc any, old []any, new []any) any {
	var rep func(v any) any
	rep = func(v any) any {
		switch x := v.(type) {
		case []any:
			if len(x) > 0 && &x[0] == &old[0] {
				return new
			}
			out := make([]any, len(x))
			for i := range x {
				out[i] = rep(x[i])
			}
			return out
		case map[string]any:
			out := make(map[string]any, len(x))
			for k, e := range x {
				out[k] = rep(e)
			}
			return out
		}
		return v
	}
	return rep(doc)
}

func cloneJSON(v any) any { return replaceIn(v, []any{nil}, nil) }

// The fast check and the library agree on every body of the recorded
// traffic and on hundreds of variants of each, wrong in one place, under
// ACP's contract and Harn's, and the fast check decides them all.
func TestFastCheckAgreesWithLibrary(t *testing.T) {
	v := newValidator(t, "")
	bodies := trafficBodies(t, v)
	if len(bodies) < 50 {
		t.Fatalf("only %d bodies", len(bodies))
	}
	var tr tree
	var ev evaluator
	docs, refused := 0, 0
	for _, b := range bodies {
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b.body))
		if err != nil {
			t.Fatal(err)
		}
		variants := append([]any{doc}, mutations(doc, 100)...)
		for _, harn := range []bool{false, true} {
			c := v.schemaCheck(harn, b.loc)
			if c.fails != nil || c.fast == nil {
				t.Fatalf("%s: %s: no fast check", b.what, b.loc)
			}
			if harn {
				variants = variants[:min(len(variants), 25)] // Harn's contract differs in few places
			}
			for i, d := range variants {
				data, err := json.Marshal(d)
				if err != nil {
					t.Fatal(err)
				}
				if err := tr.parse(data, true); err != nil {
					t.Fatalf("%s: %s", data, err)
				}
				fast, decided := fastValid(c.fast, &tr, &ev)
				if !decided {
					t.Errorf("%s (harn %v): the fast check gave up on %s", b.what, harn, data)
					continue
				}
				doc, _ := jsonschema.UnmarshalJSON(bytes.NewReader(data))
				lib := c.sch.Validate(doc) == nil
				if fast != lib {
					t.Errorf("%s (harn %v), variant %d: fast check %v, library %v: %s", b.what, harn, i, fast, lib, data)
				}
				docs++
				if !lib {
					refused++
				}
			}
		}
	}
	t.Logf("%d bodies, %d documents judged, %d refused", len(bodies), docs, refused)
	if refused == 0 || refused == docs {
		t.Errorf("%d of %d refused: the variants do not exercise both answers", refused, docs)
	}
}

// A body the fast check refuses goes to the library, whose verdict and
// error decide: a union variant this version does not know is refused by
// the schema's closed list but kept by the type (counted as Unknown, and
// a note, not a problem), while a wrong member is a problem at its pointer.
func TestFastCheckRefusalsGoToTheLibrary(t *testing.T) {
	v := newValidator(t, "")
	unknown := `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"zz_future_update","x":1}}}`
	ps, st := check(t, v, "t.ndjson", initReq+"\n"+initResp+"\n"+unknown+"\n")
	if len(ps) != 1 || !ps[0].Note || ps[0].Pointer != "/params/update/sessionUpdate" || st.Unknown != 1 || st.Notes != 1 || st.Checked != 3 {
		t.Errorf("unknown variant: problems %v, stats %+v", ps, st)
	}
	c := v.schemaCheck(false, "acp/v1/schema.json#/$defs/SessionNotification")
	var tr tree
	var ev evaluator
	if err := tr.parse([]byte(`{"sessionId":"s","update":{"sessionUpdate":"zz_future_update","x":1}}`), true); err != nil {
		t.Fatal(err)
	}
	if c.fast == nil {
		t.Fatal("no fast check for SessionNotification")
	}
	if valid, decided := fastValid(c.fast, &tr, &ev); valid || !decided {
		t.Errorf("fast check: valid %v, decided %v; want refused", valid, decided)
	}
	bad := `{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s","prompt":[{"type":"text","text":7}]}}`
	ps, _ = check(t, v, "t.ndjson", initReq+"\n"+initResp+"\n"+bad+"\n")
	if !slices.ContainsFunc(ps, func(p Problem) bool { return p.Line == 3 && p.Pointer == "/params/prompt/0/text" }) {
		t.Errorf("wrong member: problems %v", ps)
	}
}

// recording reads a line as json.Unmarshal into a recording does, on the
// recorder's own lines (read without json.Unmarshal) and on every odd one.
func TestRecordingAgreesWithUnmarshal(t *testing.T) {
	frame := `{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\",\"params\":{\"a\":\"\\u00e9\\n\"}}`
	lines := []string{
		`{"seq":1,"ms":0,"dir":"send","method":"x","id":1,"line":"` + frame + `"}`,
		`{"seq":2,"ms":3,"dir":"recv","id":1,"line":"` + frame + `","cut":true}`,
		`{"seq":2,"dir":"recv","line":"` + frame + `","cut":false,"extra":{"a":1,"a":2}}`,
		`{"dir":"send","line":"x"}`,
		`{"seq":1,"line":"x"}`,
		`{"seq":1,"dir":"sideways","line":"x"}`,
		`{"seq":1.5,"dir":"send","line":"x"}`,
		`{"seq":"1","dir":"send","line":"x"}`,
		`{"seq":null,"dir":"send","line":"x"}`,
		`{"seq":1,"dir":"send","line":null}`,
		`{"seq":1,"dir":"send","line":7}`,
		`{"seq":1,"dir":"send","line":"x","cut":"yes"}`,
		`{"SEQ":1,"Dir":"send","LINE":"x"}`,
		`{"seq":1,"dir":"send","line":"x","Line":"y"}`,
		`{"seq":1,"dir":"send","line":"x","line":"y"}`,
		`{"seq":1,"dir":"send","di\u0072":"recv","line":"x"}`,
		`{"seq":1,"dir":"\u0073end","line":"x"}`,
		`{"seq":1,"dir":"send","line":"\ud800"}`,
		"{\"seq\":1,\"dir\":\"send\",\"line\":\"\xff\"}",
		`{"seq":1,"dir":"send","line":"x"} {}`,
		`{"seq":1,"dir":"send","line":"x"`,
		`[1]`,
		`{"seq":1,"dir":"send","line":"x","ſeq":2}`,
	}
	st := &stream{}
	fastLines := 0
	for _, l := range lines {
		got, recv, cut, ok := st.recording([]byte(l))
		want, wrecv, wcut, wok := recordingSlow([]byte(l))
		if ok != wok || ok && (string(got) != string(want) || recv != wrecv || cut != wcut) {
			t.Errorf("%s: got %q %v %v %v, json.Unmarshal %q %v %v %v", l, got, recv, cut, ok, want, wrecv, wcut, wok)
		}
		if _, _, _, _, decided := st.recordingFast([]byte(l)); decided {
			fastLines++
		}
	}
	if fastLines < 3 {
		t.Errorf("only %d lines read without json.Unmarshal", fastLines)
	}
}

func recordingSlow(line []byte) ([]byte, bool, bool, bool) {
	var rec recording
	if err := json.Unmarshal(line, &rec); err != nil || rec.Seq == nil || rec.Dir != "send" && rec.Dir != "recv" {
		return nil, false, false, false
	}
	return []byte(rec.Line), rec.Dir == "recv", rec.Cut, true
}

func FuzzRecording(f *testing.F) {
	f.Add(`{"seq":1,"ms":0,"dir":"send","line":"{\"jsonrpc\":\"2.0\"}"}`)
	f.Add(`{"seq":2,"dir":"recv","line":"x","cut":true,"Cut":false}`)
	f.Add(`{"seq":1,"dir":"send","line":"\u00e9","x":[{"a":1,"a":2}]}`)
	st := &stream{}
	f.Fuzz(func(t *testing.T, l string) {
		got, recv, cut, ok := st.recording([]byte(l))
		want, wrecv, wcut, wok := recordingSlow([]byte(l))
		if ok != wok || ok && (string(got) != string(want) || recv != wrecv || cut != wcut) {
			t.Fatalf("got %q %v %v %v, json.Unmarshal %q %v %v %v", got, recv, cut, ok, want, wrecv, wcut, wok)
		}
	})
}

// The tree refuses what jsontext refuses (duplicate names among them),
// and holds names and strings unescaped, members sorted.
func TestTreeParse(t *testing.T) {
	var tr tree
	for _, bad := range []string{`{"a":1,"a":2}`, `{"a":{"b":1,"\u0062":2}}`, `[1,]`, `{"a":1} x`, "\"\xff\"", `{"a"}`, ``} {
		if err := tr.parse([]byte(bad), true); err == nil {
			t.Errorf("%s: parsed", bad)
		}
	}
	if err := tr.parse([]byte(`{"b":[1,"x\n"],"a\u00e9":true}`), true); err != nil {
		t.Fatal(err)
	}
	root := &tr.nodes[0]
	var names []string
	for _, m := range tr.members(root) {
		names = append(names, string(tr.name(m)))
	}
	if strings.Join(names, ",") != "aé,b" {
		t.Errorf("members %q", names)
	}
	b := tr.member(root, "b")
	if b < 0 || tr.nodes[b].kind != '[' || string(tr.str(&tr.nodes[tr.members(&tr.nodes[b])[1].val])) != "x\n" {
		t.Errorf("member b: %d", b)
	}
	if tr.member(root, "c") >= 0 {
		t.Error("member c found")
	}
}

// parseFast accepts only what jsontext's decoder accepts, and reads it
// into the same tree.
func FuzzTreeParse(f *testing.F) {
	for _, s := range []string{`{"b":[1,"x\n"],"a\u00e9":true}`, `{"a":1,"a":2}`, `[1,]`, `-0.5e+3`, `01`, `"\ud800"`, "\"\xff\"", `{"a":{"b":null}} `,
		`"\u0000\t"`, "\"\t\"", `[[[]]]`, `1.`, `{"a" : [ true , false ] }`, `"\\"`, `{"\u0061":1,"a":2}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var fast, dec tree
		if !fast.parseFast([]byte(s)) {
			return
		}
		if err := dec.parseDecoder([]byte(s), true); err != nil {
			t.Fatalf("%q: parseFast accepts, jsontext: %v", s, err)
		}
		if !slices.Equal(fast.nodes, dec.nodes) || !slices.Equal(fast.kids, dec.kids) || !bytes.Equal(fast.text, dec.text) {
			t.Fatalf("%q: trees differ:\n%v %v %q\n%v %v %q", s, fast.nodes, fast.kids, fast.text, dec.nodes, dec.kids, dec.text)
		}
	})
}
