package memory

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

var ctx = context.Background()

func openStore(t testing.TB, path string, opt Options) *Store {
	t.Helper()
	if path == "" {
		path = filepath.Join(t.TempDir(), "memory.db")
	}
	s, err := Open(path, opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

const (
	pkg  = "@zack/m16-reference-memory"
	ver  = "0.1.0"
	nowA = "2026-09-11T00:00:00Z"
	nowB = "2026-09-11T00:00:01Z"
)

func note(scope Scope, content string) WriteRequest {
	return WriteRequest{Package: pkg, PackageVersion: ver, Space: "notes", SpaceModel: Collection, RecordType: "note",
		SchemaVersion: "1.0.0", Scope: scope, Operation: Create, Content: jsontext.Value(content),
		Provenance: jsontext.Value(`{"harness":{"kind":"test"}}`), Now: nowA}
}

func mustWrite(t testing.TB, s *Store, req WriteRequest) *WriteResult {
	t.Helper()
	r, err := s.Write(ctx, req)
	if err != nil {
		t.Fatalf("write %+v: %v", req, err)
	}
	return r
}

func read(t testing.TB, s *Store, req ReadRequest) []Record {
	t.Helper()
	recs, err := s.Read(ctx, req)
	if err != nil {
		t.Fatalf("read %+v: %v", req, err)
	}
	return recs
}

func markers(recs []Record) []string {
	out := []string{}
	for _, r := range recs {
		var c struct {
			Marker string `json:"marker"`
		}
		json.Unmarshal(r.Content, &c)
		out = append(out, c.Marker)
	}
	return out
}

func readReq(scope Scope, mode ReadMode) ReadRequest {
	return ReadRequest{Package: pkg, PackageVersion: ver, Space: "notes", Scope: scope, Mode: mode, RecordType: "note", Now: nowB}
}

// The flow of the M16 reference providers' conformance suite.
func TestConformanceFlow(t *testing.T) {
	s := openStore(t, "", Options{})
	scope := Scope{"user": "u1"}
	alpha := mustWrite(t, s, note(scope, `{"body":"launch readiness note","topic":"launch","marker":"alpha"}`))
	b := note(scope, `{"body":"ops handoff note","topic":"ops","marker":"beta"}`)
	b.Now = nowB
	beta := mustWrite(t, s, b)
	if !strings.HasPrefix(alpha.RecordID, "mem-") || alpha.RecordID == beta.RecordID || alpha.Operation != Create || alpha.Affected != 1 {
		t.Fatalf("write results %+v %+v", alpha, beta)
	}
	r := alpha.Record
	if r.ScopeJSON != `{"user":"u1"}` || r.ScopeHash != "sha256:"+sha(`{"user":"u1"}`) || r.CreatedAt != nowA ||
		r.UpdatedAt != nowA || r.ExpiresAt != nil || r.ArchivedAt != nil || r.Ordinal != nil || r.Package != pkg {
		t.Fatalf("record %+v", r)
	}

	key := readReq(scope, ModeKey)
	key.RecordID = alpha.RecordID
	if got := markers(read(t, s, key)); !slices.Equal(got, []string{"alpha"}) {
		t.Fatalf("key read %v", got)
	}
	filter := readReq(scope, ModeFilter)
	filter.Filter = map[string]jsontext.Value{"topic": jsontext.Value(`"ops"`)}
	if got := markers(read(t, s, filter)); !slices.Equal(got, []string{"beta"}) {
		t.Fatalf("filter read %v", got)
	}
	chrono := readReq(scope, ModeChronological)
	chrono.Limit = 10
	if got := markers(read(t, s, chrono)); !slices.Equal(got, []string{"alpha", "beta"}) {
		t.Fatalf("chronological read %v", got)
	}
	full := readReq(scope, ModeFullText)
	full.Query = "handoff"
	if got := markers(read(t, s, full)); !slices.Equal(got, []string{"beta"}) {
		t.Fatalf("full text read %v", got)
	}
	if n, err := s.Count(ctx, CountRequest{Package: pkg, PackageVersion: ver, Space: "notes", Scope: scope, RecordType: "note", Now: nowB}); n != 2 || err != nil {
		t.Fatalf("count %d, %v", n, err)
	}

	state := jsontext.Value(`{"package":"` + pkg + `","package_version":"0.1.0","operation":"summarize_notes","scope":{"user":"u1"},"trigger_type":"record_count","armed":true,"updated_at":"` + nowB + `"}`)
	skey := StateKey{Package: pkg, PackageVersion: ver, Operation: "summarize_notes", Scope: scope}
	if got, err := s.LoadOperationState(ctx, skey); got != nil || err != nil {
		t.Fatalf("state before store: %s, %v", got, err)
	}
	if err := s.StoreOperationState(ctx, skey, state); err != nil {
		t.Fatal(err)
	}
	if got, err := s.LoadOperationState(ctx, skey); string(got) != string(state) || err != nil {
		t.Fatalf("loaded state %s, %v", got, err)
	}

	summary := note(scope, `{"summary":"launch readiness note","source_count":1,"marker":"summary"}`)
	summary.Space, summary.RecordType = "summaries", "summary"
	del := note(scope, "")
	del.Operation, del.RecordID = Delete, alpha.RecordID
	res, err := s.CommitLifecycle(ctx, CommitRequest{
		Package: pkg, PackageVersion: ver, Operation: "summarize_notes",
		ExpectedSources: []ExpectedSource{{ID: alpha.RecordID, RecordID: alpha.RecordID, Package: pkg, PackageVersion: ver,
			Space: "notes", Scope: scope, ContentHash: "sha256:" + sha(`{"body":"launch readiness note","topic":"launch","marker":"alpha"}`)}},
		OutputWrites: []WriteRequest{summary}, SourceMutations: []WriteRequest{del}, OperationState: state, Now: nowB,
	})
	if err != nil || len(res.OutputRecordIDs) != 1 || !slices.Equal(res.SourceRecordIDs, []string{alpha.RecordID}) {
		t.Fatalf("commit %+v, %v", res, err)
	}
	if got := markers(read(t, s, chrono)); !slices.Equal(got, []string{"beta"}) {
		t.Fatalf("notes after commit %v", got)
	}
	sum := ReadRequest{Package: pkg, PackageVersion: ver, Space: "summaries", Scope: scope, Mode: ModeFilter, RecordType: "summary",
		Filter: map[string]jsontext.Value{"marker": jsontext.Value(`"summary"`)}, Now: nowB}
	if got := read(t, s, sum); len(got) != 1 || got[0].ID != res.OutputRecordIDs[0] {
		t.Fatalf("summaries after commit %v", got)
	}
	// The stored state's watermark records the commit; other members keep
	// their order.
	got, _ := s.LoadOperationState(ctx, skey)
	want := strings.TrimSuffix(string(state), "}") + `,"watermark":{"last_mutated_source_record_ids":["` + alpha.RecordID +
		`"],"last_output_record_ids":["` + res.OutputRecordIDs[0] + `"]}}`
	if string(got) != want {
		t.Fatalf("state after commit\n got %s\nwant %s", got, want)
	}
}

// The filter rules of the conformance suite.
func TestFilterSemantics(t *testing.T) {
	s := openStore(t, "", Options{})
	scope := Scope{"user": "f"}
	mustWrite(t, s, note(scope, `{"marker":"match","topic":"launch","status":"ready","tags":["alpha","beta"],
		"nested":{"level":{"value":"deep"}},"members":[{"name":"no"},{"name":"target"}],"groups":[{"items":[{"name":"x"}]}],
		"arrayValue":[{"code":"a"},{"code":"b"}],"a":{"b":1},"presentNull":null,"n":1.0}`))
	mustWrite(t, s, note(scope, `{"marker":"other","topic":"other","status":"draft","tags":["gamma"],"nested":{"level":{"value":"shallow"}},
		"members":[{"name":"other"}],"groups":[{"items":[{"name":"y"}]}],"arrayValue":[{"code":"z"}],"a":{"b":1}}`))
	for _, tc := range []struct {
		name   string
		filter map[string]string
		want   []string
	}{
		{"top-level scalar", map[string]string{"topic": `"launch"`}, []string{"match"}},
		{"leaf-array containment", map[string]string{"tags": `"beta"`}, []string{"match"}},
		{"nested object path", map[string]string{"nested.level.value": `"deep"`}, []string{"match"}},
		{"array of objects mid-path", map[string]string{"members.name": `"target"`}, []string{"match"}},
		{"nested arrays mid-path", map[string]string{"groups.items.name": `"x"`}, []string{"match"}},
		{"present null", map[string]string{"presentNull": `null`}, []string{"match"}},
		{"absent path with null", map[string]string{"a.c": `null`}, []string{}},
		{"whole-array equality", map[string]string{"arrayValue": `[{"code":"a"},{"code":"b"}]`}, []string{"match"}},
		{"array order matters", map[string]string{"arrayValue": `[{"code":"b"},{"code":"a"}]`}, []string{}},
		{"conjunctive", map[string]string{"topic": `"launch"`, "status": `"ready"`}, []string{"match"}},
		{"conjunction fails", map[string]string{"topic": `"launch"`, "status": `"draft"`}, []string{}},
		{"non-matching", map[string]string{"topic": `"missing"`}, []string{}},
		{"both share a value", map[string]string{"a.b": `1`}, []string{"match", "other"}},
		{"numbers compare by value", map[string]string{"n": `1`}, []string{"match"}},
		{"object equality", map[string]string{"a": `{"b":1}`}, []string{"match", "other"}},
		{"no filter", map[string]string{}, []string{"match", "other"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := readReq(scope, ModeFilter)
			req.Filter = map[string]jsontext.Value{}
			for k, v := range tc.filter {
				req.Filter[k] = jsontext.Value(v)
			}
			got := markers(read(t, s, req))
			slices.Sort(got)
			if !slices.Equal(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
	bad := readReq(scope, ModeFilter)
	bad.Filter = map[string]jsontext.Value{"x": jsontext.Value(`{`)}
	if _, err := s.Read(ctx, bad); !errors.Is(err, ErrContractViolation) {
		t.Fatalf("bad filter value: %v", err)
	}
}

func TestWriteSemantics(t *testing.T) {
	s := openStore(t, "", Options{})
	scope := Scope{"user": "w"}
	doc := func(op Operation, content string) WriteRequest {
		w := note(scope, content)
		w.Space, w.SpaceModel, w.RecordType, w.Operation = "profile", Document, "profile", op
		return w
	}
	first := mustWrite(t, s, doc(Create, `{"v":1}`))
	if _, err := s.Write(ctx, doc(Create, `{"v":2}`)); !errors.Is(err, ErrConflict) {
		t.Fatalf("second document create: %v", err)
	}
	up := doc(Upsert, `{"v":3}`)
	up.Now = nowB
	r := mustWrite(t, s, up)
	if r.RecordID != first.RecordID || string(r.Record.Content) != `{"v":3}` || r.Record.CreatedAt != nowA || r.Record.UpdatedAt != nowB {
		t.Fatalf("document upsert %+v", r.Record)
	}
	upd := doc(Update, `{"v":4}`)
	upd.RecordType = "other"
	if _, err := s.Write(ctx, upd); !errors.Is(err, ErrNotFound) {
		t.Fatalf("update of another record type's document: %v", err)
	}
	upd = note(scope, `{}`)
	upd.Operation, upd.RecordID, upd.Space, upd.SpaceModel, upd.RecordType = Update, first.RecordID, "profile", Document, "other"
	if _, err := s.Write(ctx, upd); !errors.Is(err, ErrRecordTypeMismatch) {
		t.Fatalf("record type mismatch: %v", err)
	}
	upd.RecordType, upd.SpaceModel = "profile", Collection
	if _, err := s.Write(ctx, upd); !errors.Is(err, ErrContractViolation) {
		t.Fatalf("space model mismatch: %v", err)
	}

	// A record id from another scope is not visible.
	other := note(Scope{"user": "intruder"}, `{}`)
	other.Operation, other.RecordID, other.Space, other.SpaceModel, other.RecordType = Delete, first.RecordID, "profile", Document, "profile"
	if _, err := s.Write(ctx, other); !errors.Is(err, ErrNotFound) {
		t.Fatalf("cross-scope delete: %v", err)
	}
	other.Operation = Create
	if _, err := s.Write(ctx, other); !errors.Is(err, ErrConflict) {
		t.Fatalf("cross-scope create with a taken id: %v", err)
	}

	// Archive hides; the id stays taken; update then fails.
	arch := doc(Archive, "")
	arch.Now = nowB
	r = mustWrite(t, s, arch)
	if r.Affected != 1 || r.Record.ArchivedAt == nil || *r.Record.ArchivedAt != nowB {
		t.Fatalf("archive %+v", r)
	}
	if n, _ := s.Count(ctx, CountRequest{Package: pkg, PackageVersion: ver, Space: "profile", Scope: scope}); n != 0 {
		t.Fatalf("count after archive %d", n)
	}
	upd.SpaceModel, upd.RecordID = Document, first.RecordID
	if _, err := s.Write(ctx, upd); !errors.Is(err, ErrNotFound) {
		t.Fatalf("update of an archived record: %v", err)
	}
	mustWrite(t, s, doc(Create, `{"v":5}`)) // the scope's document slot is free again

	// Scope-wide delete; explicit delete of a missing id.
	for i := range 3 {
		mustWrite(t, s, note(scope, fmt.Sprintf(`{"i":%d}`, i)))
	}
	del := note(scope, "")
	del.Operation = Delete
	if r := mustWrite(t, s, del); r.Affected != 3 || r.Record == nil {
		t.Fatalf("scope delete %+v", r)
	}
	if r := mustWrite(t, s, del); r.Affected != 0 || r.Record != nil || r.RecordID != "" {
		t.Fatalf("empty scope delete %+v", r)
	}
	del.RecordID = "mem-missing"
	if _, err := s.Write(ctx, del); !errors.Is(err, ErrNotFound) {
		t.Fatalf("delete of a missing id: %v", err)
	}
	// create with a chosen id, then again.
	own := note(scope, `{}`)
	own.RecordID = "my-id"
	if r := mustWrite(t, s, own); r.RecordID != "my-id" {
		t.Fatal(r)
	}
	if _, err := s.Write(ctx, own); !errors.Is(err, ErrConflict) {
		t.Fatalf("duplicate id: %v", err)
	}
	// upsert without an existing record creates.
	ups := note(Scope{"user": "new"}, `{"x":1}`)
	ups.Operation = Upsert
	if r := mustWrite(t, s, ups); r.Operation != Upsert || r.RecordID == "" {
		t.Fatal(r)
	}
}

func TestInvalidRequests(t *testing.T) {
	s := openStore(t, "", Options{})
	scope := Scope{"u": "1"}
	for name, w := range map[string]func(*WriteRequest){
		"no package":        func(w *WriteRequest) { w.Package = "" },
		"no space":          func(w *WriteRequest) { w.Space = "" },
		"bad space model":   func(w *WriteRequest) { w.SpaceModel = "heap" },
		"no record type":    func(w *WriteRequest) { w.RecordType = "" },
		"no schema version": func(w *WriteRequest) { w.SchemaVersion = "" },
		"bad operation":     func(w *WriteRequest) { w.Operation = "merge" },
		"bad now":           func(w *WriteRequest) { w.Now = "yesterday" },
		"bad content":       func(w *WriteRequest) { w.Content = jsontext.Value(`{"a":`) },
		"duplicate names":   func(w *WriteRequest) { w.Content = jsontext.Value(`{"a":1,"a":2}`) },
		"bad provenance":    func(w *WriteRequest) { w.Provenance = jsontext.Value(`nope`) },
	} {
		req := note(scope, `{}`)
		w(&req)
		if _, err := s.Write(ctx, req); !errors.Is(err, ErrContractViolation) {
			t.Errorf("%s: %v", name, err)
		}
	}
	for name, r := range map[string]func(*ReadRequest){
		"key without id": func(r *ReadRequest) { r.Mode = ModeKey },
		"unknown mode":   func(r *ReadRequest) { r.Mode = "vector" },
		"negative limit": func(r *ReadRequest) { r.Limit = -1 },
		"no version":     func(r *ReadRequest) { r.PackageVersion = "" },
		"bad now":        func(r *ReadRequest) { r.Now = "2026-13-01" },
	} {
		req := readReq(scope, ModeChronological)
		r(&req)
		if _, err := s.Read(ctx, req); !errors.Is(err, ErrContractViolation) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := s.Read(ctx, readReq(scope, ModeSemantic)); !errors.Is(err, ErrUnsupported) {
		t.Errorf("semantic: %v", err)
	}
	var e *Error
	if _, err := s.Read(ctx, readReq(scope, ModeSemantic)); !errors.As(err, &e) || e.Code != CodeUnsupported || e.Message == "" {
		t.Errorf("typed error %#v", err)
	}
	if _, err := s.LoadOperationState(ctx, StateKey{Package: pkg}); !errors.Is(err, ErrContractViolation) {
		t.Errorf("state key: %v", err)
	}
	if _, err := s.CommitLifecycle(ctx, CommitRequest{Package: pkg}); !errors.Is(err, ErrContractViolation) {
		t.Errorf("commit: %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.Write(cctx, note(scope, `{}`)); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled write: %v", err)
	}
}

func TestRules(t *testing.T) {
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := openStore(t, "", Options{Clock: func() time.Time { return clock }})
	s.Configure(map[Route]Rules{
		{pkg, ver, "log"}:   {AppendOnly: true},
		{pkg, ver, "small"}: {Capacity: 2},
		{pkg, ver, "temp"}:  {Retention: time.Hour},
	})
	scope := Scope{"u": "r"}
	w := func(space string, op Operation, id string) WriteRequest {
		r := note(scope, `{}`)
		r.Space, r.Operation, r.RecordID, r.Now = space, op, id, ""
		return r
	}
	logged := mustWrite(t, s, w("log", Create, ""))
	for _, op := range []Operation{Update, Upsert, Delete, Archive} {
		if _, err := s.Write(ctx, w("log", op, logged.RecordID)); !errors.Is(err, ErrConstraintViolation) {
			t.Errorf("append-only %s: %v", op, err)
		}
	}
	mustWrite(t, s, w("log", Upsert, "")) // a new record: allowed

	mustWrite(t, s, w("small", Create, ""))
	second := mustWrite(t, s, w("small", Create, ""))
	if _, err := s.Write(ctx, w("small", Create, "")); !errors.Is(err, ErrCapacityExceeded) {
		t.Fatalf("over capacity: %v", err)
	}
	mustWrite(t, s, w("small", Update, second.RecordID)) // updates do not count
	mustWrite(t, s, w("small", Archive, second.RecordID))
	mustWrite(t, s, w("small", Create, "")) // room again

	tmp := mustWrite(t, s, w("temp", Create, ""))
	if tmp.Record.ExpiresAt == nil || *tmp.Record.ExpiresAt != "2026-01-01T01:00:00Z" || tmp.Record.CreatedAt != "2026-01-01T00:00:00Z" {
		t.Fatalf("retention %+v", tmp.Record)
	}
	count := func(now string) int {
		n, err := s.Count(ctx, CountRequest{Package: pkg, PackageVersion: ver, Space: "temp", Scope: scope, Now: now})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if count("2026-01-01T00:59:59Z") != 1 || count("2026-01-01T01:00:00Z") != 0 {
		t.Fatal("expiry")
	}
	clock = clock.Add(2 * time.Hour)
	if _, err := s.Write(ctx, w("temp", Update, tmp.RecordID)); !errors.Is(err, ErrNotFound) {
		t.Fatalf("update of an expired record: %v", err)
	}
}

func TestSequenceOrdinals(t *testing.T) {
	path := filepath.Join(t.TempDir(), "seq.db")
	s := openStore(t, path, Options{})
	scope := Scope{"u": "s"}
	seq := func(now string) WriteRequest {
		w := note(scope, `{}`)
		w.Space, w.SpaceModel, w.Now = "events", Sequence, now
		return w
	}
	// Later ordinals sort later even with earlier timestamps.
	a := mustWrite(t, s, seq(nowB))
	b := mustWrite(t, s, seq(nowA))
	del := seq("")
	del.Operation, del.RecordID = Delete, b.RecordID
	mustWrite(t, s, del)
	s.Close()
	s = openStore(t, path, Options{})
	c := mustWrite(t, s, seq(nowA))
	if *a.Record.Ordinal != 1 || *b.Record.Ordinal != 2 || *c.Record.Ordinal != 3 {
		t.Fatalf("ordinals %d %d %d (never reused, kept across restarts)", *a.Record.Ordinal, *b.Record.Ordinal, *c.Record.Ordinal)
	}
	other := seq(nowA)
	other.Scope = Scope{"u": "t"}
	if r := mustWrite(t, s, other); *r.Record.Ordinal != 1 {
		t.Fatal("ordinals are per scope")
	}
	req := ReadRequest{Package: pkg, PackageVersion: ver, Space: "events", Scope: scope, Mode: ModeChronological}
	recs := read(t, s, req)
	if len(recs) != 2 || recs[0].ID != a.RecordID || recs[1].ID != c.RecordID {
		t.Fatalf("order %v", recs)
	}
}

func TestBatchIsAtomic(t *testing.T) {
	s := openStore(t, "", Options{})
	scope := Scope{"u": "b"}
	ok := note(scope, `{"marker":"one"}`)
	bad := note(scope, `{}`)
	bad.Operation, bad.RecordID = Update, "mem-missing"
	_, err := s.Batch(ctx, []WriteRequest{ok, bad})
	var e *Error
	if !errors.Is(err, ErrNotFound) || !errors.As(err, &e) || !strings.HasPrefix(e.Message, "write 1: ") {
		t.Fatalf("batch: %v", err)
	}
	if n, _ := s.Count(ctx, CountRequest{Package: pkg, PackageVersion: ver, Space: "notes", Scope: scope}); n != 0 {
		t.Fatal("failed batch left a write behind")
	}
	res, err := s.Batch(ctx, []WriteRequest{ok, note(scope, `{"marker":"two"}`)})
	if err != nil || len(res) != 2 || res[0].RecordID == res[1].RecordID {
		t.Fatalf("batch %+v, %v", res, err)
	}
}

func TestCommitIsAtomic(t *testing.T) {
	s := openStore(t, "", Options{})
	scope := Scope{"u": "c"}
	src := mustWrite(t, s, note(scope, `{"b":"é","a":1}`))
	out := note(scope, `{"marker":"summary"}`)
	out.Space = "summaries"
	state := jsontext.Value(`{"scope":{"u":"c"},"watermark":{"kept":true}}`)
	commit := func(hash string) (*CommitResult, error) {
		return s.CommitLifecycle(ctx, CommitRequest{Package: pkg, PackageVersion: ver, Operation: "op",
			ExpectedSources: []ExpectedSource{{RecordID: src.RecordID, ContentHash: hash}},
			OutputWrites:    []WriteRequest{out}, OperationState: state})
	}
	_, err := commit("sha256:" + sha(`{"b":"é","a":2}`))
	var e *Error
	if !errors.Is(err, ErrCommitFailed) || !errors.Is(err, ErrConflict) || !errors.As(err, &e) || !strings.Contains(e.Message, "stale") {
		t.Fatalf("stale source: %v", err)
	}
	if n, _ := s.Count(ctx, CountRequest{Package: pkg, PackageVersion: ver, Space: "summaries", Scope: scope}); n != 0 {
		t.Fatal("failed commit wrote its output")
	}
	if st, _ := s.LoadOperationState(ctx, StateKey{Package: pkg, PackageVersion: ver, Operation: "op", Scope: scope}); st != nil {
		t.Fatal("failed commit stored its state")
	}
	// The hash of the content as written (JavaScript's JSON.stringify), in
	// canonical form (sorted members), or ASCII-escaped (Python's dumps).
	for _, form := range []string{`{"b":"é","a":1}`, `{"a":1,"b":"é"}`, `{"b":"\u00e9","a":1}`} {
		if _, err := commit("sha256:" + sha(form)); err != nil {
			t.Fatalf("hash of %s refused: %v", form, err)
		}
	}
	st, _ := s.LoadOperationState(ctx, StateKey{Package: pkg, PackageVersion: ver, Operation: "op", Scope: scope})
	var got struct {
		Watermark struct {
			Kept bool     `json:"kept"`
			Out  []string `json:"last_output_record_ids"`
			Src  []string `json:"last_mutated_source_record_ids"`
		} `json:"watermark"`
	}
	if err := json.Unmarshal(st, &got); err != nil || !got.Watermark.Kept || len(got.Watermark.Out) != 1 || got.Watermark.Src == nil {
		t.Fatalf("state %s: %v", st, err)
	}
	// A missing source, a failing write: nothing applied either way.
	if _, err := commit("sha256:00"); !errors.Is(err, ErrCommitFailed) {
		t.Fatal(err)
	}
	_, err = s.CommitLifecycle(ctx, CommitRequest{Package: pkg, PackageVersion: ver, Operation: "op",
		ExpectedSources: []ExpectedSource{{ID: "mem-gone", ContentHash: "sha256:00"}}})
	if !errors.Is(err, ErrCommitFailed) || !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing source: %v", err)
	}
	bad := note(scope, `{}`)
	bad.Operation, bad.RecordID = Update, "mem-gone"
	before, _ := s.Count(ctx, CountRequest{Package: pkg, PackageVersion: ver, Space: "summaries", Scope: scope})
	_, err = s.CommitLifecycle(ctx, CommitRequest{Package: pkg, PackageVersion: ver, Operation: "op",
		OutputWrites: []WriteRequest{out}, SourceMutations: []WriteRequest{bad}})
	if !errors.Is(err, ErrCommitFailed) || !errors.Is(err, ErrNotFound) {
		t.Fatalf("failing mutation: %v", err)
	}
	if after, _ := s.Count(ctx, CountRequest{Package: pkg, PackageVersion: ver, Space: "summaries", Scope: scope}); after != before {
		t.Fatal("output written although a mutation failed")
	}
	if _, err := s.CommitLifecycle(ctx, CommitRequest{Package: pkg, PackageVersion: ver, Operation: "op", OperationState: jsontext.Value(`[1]`)}); !errors.Is(err, ErrCommitFailed) {
		t.Fatalf("non-object state: %v", err)
	}
}

func TestOperationStateRemoval(t *testing.T) {
	s := openStore(t, "", Options{})
	k := StateKey{Package: pkg, PackageVersion: ver, Operation: "op"}
	if err := s.StoreOperationState(ctx, k, jsontext.Value(` {"a": 1} `)); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.LoadOperationState(ctx, k); string(got) != `{"a":1}` {
		t.Fatalf("state %s", got)
	}
	other := k
	other.Scope = Scope{"u": "x"}
	if got, _ := s.LoadOperationState(ctx, other); got != nil {
		t.Fatal("state leaked across scopes")
	}
	if err := s.StoreOperationState(ctx, k, jsontext.Value(`null`)); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.LoadOperationState(ctx, k); got != nil {
		t.Fatalf("state after null %s", got)
	}
	if err := s.StoreOperationState(ctx, k, jsontext.Value(`{`)); !errors.Is(err, ErrContractViolation) {
		t.Fatal(err)
	}
}

func TestPersistence(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.db")
	s := openStore(t, path, Options{})
	scope := Scope{"user": "p"}
	var ids []string
	for i := range 20 {
		ids = append(ids, mustWrite(t, s, note(scope, fmt.Sprintf(`{"marker":"m%02d"}`, i))).RecordID)
	}
	k := StateKey{Package: pkg, PackageVersion: ver, Operation: "op", Scope: scope}
	s.StoreOperationState(ctx, k, jsontext.Value(`{"armed":true}`))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Read(ctx, readReq(scope, ModeChronological)); !errors.Is(err, ErrClosed) {
		t.Fatalf("read after close: %v", err)
	}
	s = openStore(t, path, Options{})
	if err := s.Check(ctx); err != nil {
		t.Fatal(err)
	}
	recs := read(t, s, readReq(scope, ModeChronological))
	if len(recs) != 20 {
		t.Fatalf("%d records after reopen", len(recs))
	}
	for _, id := range ids {
		if !slices.ContainsFunc(recs, func(r Record) bool { return r.ID == id }) {
			t.Fatalf("record %s lost", id)
		}
	}
	if st, _ := s.LoadOperationState(ctx, k); string(st) != `{"armed":true}` {
		t.Fatalf("state lost: %s", st)
	}
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "locked.db")
	openStore(t, path, Options{})
	start := time.Now()
	if _, err := Open(path, Options{LockTimeout: 100 * time.Millisecond}); !errors.Is(err, ErrLocked) {
		t.Fatalf("second open: %v", err)
	}
	if time.Since(start) > 5*time.Second {
		t.Fatal("lock timeout not honoured")
	}
	junk := filepath.Join(dir, "junk.db")
	writeJunk(t, junk)
	if _, err := Open(junk, Options{}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("junk file: %v", err)
	}
	if _, err := Open(filepath.Join(dir, "no", "such", "dir.db"), Options{}); err == nil {
		t.Fatal("open in a missing folder succeeded")
	}
}

// Writers and readers at once: -race checks the store, and every write is
// there at the end.
func TestConcurrentUse(t *testing.T) {
	s := openStore(t, "", Options{})
	var wg sync.WaitGroup
	const writers, each = 4, 15
	for w := range writers {
		wg.Go(func() {
			scope := Scope{"writer": fmt.Sprint(w)}
			for i := range each {
				if _, err := s.Write(ctx, note(scope, fmt.Sprintf(`{"i":%d}`, i))); err != nil {
					t.Error(err)
					return
				}
				if _, err := s.Read(ctx, readReq(scope, ModeChronological)); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Go(func() {
		for range 20 {
			s.Configure(map[Route]Rules{{pkg, ver, "other"}: {Capacity: 1}})
		}
	})
	wg.Wait()
	for w := range writers {
		n, err := s.Count(ctx, CountRequest{Package: pkg, PackageVersion: ver, Space: "notes", Scope: Scope{"writer": fmt.Sprint(w)}})
		if err != nil || n != each {
			t.Fatalf("writer %d: %d records, %v", w, n, err)
		}
	}
}

func TestDescriptorJSON(t *testing.T) {
	s := openStore(t, "", Options{})
	b, err := json.Marshal(s.Descriptor())
	if err != nil {
		t.Fatal(err)
	}
	want := `{"space_models":["document","collection","sequence"],"retrieval_modes":["key","filter","chronological","full_text"],` +
		`"retention_actions":["delete","archive"],"constraints":["append_only"],"capacity":false,"durable_trigger_state":true,"atomic_batches":true}`
	if string(b) != want {
		t.Fatalf("descriptor %s", b)
	}
	// Capacity is advertised only once a space has one.
	s.Configure(map[Route]Rules{{pkg, ver, "small"}: {Capacity: 2}})
	if !s.Descriptor().Capacity {
		t.Fatal("a configured capacity is not advertised")
	}
	r := mustWrite(t, s, note(Scope{"u": "j"}, `{"x":1}`))
	b, _ = json.Marshal(r.Record)
	for _, member := range []string{`"expires_at":null`, `"archived_at":null`, `"ordinal":null`, `"content":{"x":1}`, `"scope_json":"{\"u\":\"j\"}"`} {
		if !strings.Contains(string(b), member) {
			t.Errorf("record JSON %s lacks %s", b, member)
		}
	}
}
