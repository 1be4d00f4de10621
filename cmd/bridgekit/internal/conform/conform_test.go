package conform

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/frames"
)

// The error codes the harn-host suite expects are the ones the catalogue
// lists for each method and host/call operation.
func TestHarnHostCodesAreTheCatalogues(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "spec", "catalogue", "harn.json"))
	if err != nil {
		t.Fatal(err)
	}
	type errs []struct {
		Code int `json:"code"`
	}
	var cat struct {
		Methods []struct {
			Wire       string `json:"wire"`
			Errors     errs   `json:"errors"`
			Operations *struct {
				Items []struct {
					Match  map[string]string `json:"match"`
					Errors errs              `json:"errors"`
				} `json:"items"`
			} `json:"operations"`
		} `json:"methods"`
	}
	if err := json.Unmarshal(b, &cat); err != nil {
		t.Fatal(err)
	}
	listed := map[string][]int{}
	for _, m := range cat.Methods {
		for _, e := range m.Errors {
			listed[m.Wire] = append(listed[m.Wire], e.Code)
		}
		if m.Operations != nil {
			for _, op := range m.Operations.Items {
				for _, e := range op.Errors {
					listed[op.Match["name"]] = append(listed[op.Match["name"]], e.Code)
				}
			}
		}
	}
	for name, codes := range catalogueCodes {
		if name == "session/request_permission" {
			continue // an ACP method: the Harn catalogue lists no errors for it
		}
		for _, c := range codes {
			if !slices.Contains(listed[name], c) {
				t.Errorf("the suite expects %d from %s; the catalogue lists %v", c, name, listed[name])
			}
		}
	}
}

func TestApplyBaseline(t *testing.T) {
	bl := &Baseline{Side: "harn-host", Expected: []BaselineEntry{{"a", "known"}, {"b", "was"}, {"c", "gone"}, {"d", "filtered"}}}
	res, err := bl.Apply("harn-host", []Result{{ID: "a", Status: Fail}, {ID: "b", Status: Pass}, {ID: "e", Status: NotImplemented}},
		func(id string) bool { return id != "d" })
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]Status{"a": ExpectedFail, "b": Stale, "c": Stale, "e": NotImplemented}
	if len(res) != len(want) {
		t.Fatalf("%+v", res)
	}
	for _, r := range res {
		if want[r.ID] != r.Status {
			t.Errorf("%s: %s, want %s", r.ID, r.Status, want[r.ID])
		}
	}
	if s := Summarize(res); s.OK || s.Stale != 2 || s.ExpectedFail != 1 {
		t.Errorf("summary %+v", s)
	}
	if _, err := bl.Apply("acp-agent", nil, nil); err == nil {
		t.Error("applied a harn-host baseline to acp-agent")
	}
}

func TestLoadBaselineRefusals(t *testing.T) {
	for name, text := range map[string]string{
		"no reason":      `{"expected_failures":[{"id":"a"}]}`,
		"no id":          `{"expected_failures":[{"reason":"r"}]}`,
		"twice":          `{"expected_failures":[{"id":"a","reason":"r"},{"id":"a","reason":"s"}]}`,
		"unknown member": `{"expected":[]}`,
		"not JSON":       `a: b`,
	} {
		path := filepath.Join(t.TempDir(), "b.json")
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadBaseline(path); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestParseMessage(t *testing.T) {
	for _, c := range []struct {
		line  string
		reply bool
		id    string
	}{
		{`{"jsonrpc":"2.0","id":3,"result":{}}`, true, "3"},
		{`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}`, true, "null"},
		{`{"jsonrpc":"2.0","method":"m","params":{}}`, false, ""},
		{`{"jsonrpc":"2.0","id":"a","method":"m"}`, false, `"a"`},
	} {
		m := parseMessage([]byte(c.line))
		if m == nil || m.IsReply() != c.reply || string(m.ID) != c.id {
			t.Errorf("%s: %+v", c.line, m)
		}
	}
	if m := parseMessage([]byte(`{"id":1,"error":"boom"}`)); m == nil || m.Error == nil {
		t.Errorf("an error member that is not an object: %+v", m)
	}
	if parseMessage([]byte(`[1]`)) != nil {
		t.Error("an array parsed as a message")
	}
}

func FuzzParseMessage(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"result":{}}`))
	f.Add([]byte(`{"id":null,"error":{"code":"x"}}`))
	f.Add([]byte(`{"method":5}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		m := parseMessage(line)
		if m != nil && m.IsReply() && m.ID == nil {
			t.Fatalf("a reply without an id: %q", line)
		}
	})
}

func FuzzLoadBaseline(f *testing.F) {
	f.Add([]byte(`{"side":"harn-host","expected_failures":[{"id":"a","reason":"r"}]}`))
	f.Add([]byte(`{"expected_failures":[{"id":"a","reason":""}]}`))
	f.Fuzz(func(t *testing.T, text []byte) {
		path := filepath.Join(t.TempDir(), "b.json")
		if err := os.WriteFile(path, text, 0o644); err != nil {
			t.Fatal(err)
		}
		bl, err := LoadBaseline(path)
		if err != nil {
			return
		}
		seen := map[string]bool{}
		for _, e := range bl.Expected {
			if e.ID == "" || e.Reason == "" || seen[e.ID] {
				t.Fatalf("accepted %+v", bl.Expected)
			}
			seen[e.ID] = true
		}
	})
}

// A frame that arrives after its scenario ended fails that scenario.
func TestLateFramesFailThePreviousScenario(t *testing.T) {
	r := Result{ID: "a", Status: Pass}
	late := []Received{{Seq: 9, Frame: frames.Frame{Method: "skills/list", Problems: []frames.Problem{{Code: frames.ProblemUnmatchedID, Pointer: "/id", Message: "reply id 77 answers no pending request"}}}}}
	attributeLate(&r, late)
	if r.Status != Fail || len(r.Problems) != 1 || r.Problems[0].Frame != 9 || r.Problems[0].Pointer != "/id" || r.Problems[0].Method != "skills/list" {
		t.Fatalf("%+v", r)
	}
	clean := Result{ID: "b", Status: Pass}
	attributeLate(&clean, []Received{{Seq: 10}})
	if clean.Status != Pass {
		t.Fatalf("%+v", clean)
	}
}

// What conform answers a runtime's host/call process.list_shells fits the
// operation's generated result type.
func TestListShellsAnswerFitsItsType(t *testing.T) {
	b, err := json.Marshal(listShells())
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, op := range frames.Operations(frames.Harn, "host/call") {
		if op.Info.Match[0] != "process.list_shells" {
			continue
		}
		found = true
		if p, bad := frames.CheckType(frames.Harn, op.Result, b, ""); bad {
			t.Fatalf("%s: %s", p.Pointer, p.Message)
		}
		if !slices.Contains(hostManifest[op.Info.Capability], op.Info.Op) {
			t.Errorf("the manifest does not list %s.%s", op.Info.Capability, op.Info.Op)
		}
	}
	if !found {
		t.Fatal("no process.list_shells operation in the catalogue")
	}
}
