package harnvm_test

import (
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/go-json-experiment/json"

	"github.com/bridgekit/bridgekit/clients/harnvm"
	"github.com/bridgekit/bridgekit/gen/harn"
	"github.com/bridgekit/bridgekit/runtime/wire/wiretest"
)

// normalTools is what Harn makes of the seed's two tools, whatever shape
// the host answered in.
const normalTools = `[{"name":"Read","description":"Read a file","schema":{"type":"object","required":["path"]},"deprecated":false},` +
	`{"name":"open_file","description":"","schema":null,"deprecated":true}]`

func TestReadToolsShapes(t *testing.T) {
	canonical := `[{"name":"Read","description":"Read a file","schema":{"type":"object","required":["path"]},"deprecated":false},` +
		`{"name":"open_file","deprecated":true}]`
	for name, tc := range map[string]struct{ in, want string }{
		"canonical {tools}":  {`{"tools":` + canonical + `}`, normalTools},
		"bare array":         {canonical, normalTools},
		"{result: {tools}}":  {`{"result":{"tools":` + canonical + `}}`, normalTools},
		"extra members kept": {`{"tools":` + canonical + `,"next":null}`, normalTools},
		"empty":              {`{"tools":[]}`, `[]`},
		"empty bare":         {`[]`, `[]`},
		"compat names": {`[{"name":"Read","short_description":"Read a file","parameters":{"type":"object","required":["path"]}},` +
			`{"name":"open_file","input_schema":"not an object","deprecated":true}]`, normalTools},
		"input_schema": {`[{"name":"a","input_schema":{"type":"object"}}]`, `[{"name":"a","description":"","schema":{"type":"object"},"deprecated":false}]`},
		"canonical names win over compat names": {`[{"name":"a","description":"d","short_description":"s","schema":{"x":1},"parameters":{"y":2}}]`,
			`[{"name":"a","description":"d","schema":{"x":1},"deprecated":false}]`},
		"a null schema falls back to a compat one": {`[{"name":"a","schema":null,"parameters":{"y":2}}]`,
			`[{"name":"a","description":"","schema":{"y":2},"deprecated":false}]`},
		"wrong types are defaults": {`[{"name":"a","description":5,"deprecated":"yes","schema":[1],"extra":{}}]`,
			`[{"name":"a","description":"","schema":null,"deprecated":false}]`},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := harnvm.ReadTools([]byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			out, err := json.Marshal(got)
			if err != nil {
				t.Fatal(err)
			}
			if !wiretest.EqualJSON(t, out, []byte(tc.want)) {
				t.Errorf("got %s", out)
			}
			for _, tool := range got {
				if tool.ShortDescription != nil || tool.Parameters != nil || tool.InputSchema != nil || tool.Extra != nil {
					t.Errorf("%s: not normalised to exactly four members: %+v", tool.Name, tool)
				}
			}
		})
	}
}

func TestReadToolsErrors(t *testing.T) {
	for in, msg := range map[string]string{
		`"tools"`:                        "host/tools/list: host response must be an array or { tools: [...] }",
		`null`:                           "host/tools/list: host response must be an array or { tools: [...] }",
		`{"tools":{}}`:                   "host/tools/list: host response must be an array or { tools: [...] }",
		`{"result":{"tools":7}}`:         "host/tools/list: host response must be an array or { tools: [...] }",
		`{}`:                             "host/tools/list: unexpected response shape",
		`{"result":[]}`:                  "host/tools/list: unexpected response shape",
		`{"tool":[]}`:                    "host/tools/list: unexpected response shape",
		`{"tools":[],"tools":[]}`:        "host/tools/list: unexpected response shape",
		`[1]`:                            "host/tools/list: every tool must be an object",
		`{"tools":[{"name":"a"},"b"]}`:   "host/tools/list: every tool must be an object",
		`[{"description":"no name"}]`:    "host/tools/list: every tool must include a string `name`",
		`[{"name":7}]`:                   "host/tools/list: every tool must include a string `name`",
		`[{"name":""}]`:                  "host/tools/list: every tool must include a string `name`",
		`{"result":{"tools":[{"n":1}]}}`: "host/tools/list: every tool must include a string `name`",
	} {
		_, err := harnvm.ReadTools([]byte(in))
		var se *harnvm.ShapeError
		if !errors.Is(err, harnvm.ErrResponseShape) || !errors.As(err, &se) || err.Error() != msg {
			t.Errorf("%s: got %v, want %q", in, err, msg)
		}
	}
}

func TestReadSkills(t *testing.T) {
	// The seed's minimal shape.
	seed := `[{"id":"deploy","name":"deploy","description":"Ship it","source":"host"},` +
		`{"id":"acme/ops/review","name":"review","description":"Code review","source":"host"}]`
	for name, in := range map[string]string{"bare array": seed, "{skills}": `{"skills":` + seed + `}`} {
		got, err := harnvm.ReadSkills([]byte(in))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out, _ := json.Marshal(got)
		if !wiretest.EqualJSON(t, out, []byte(seed)) {
			t.Errorf("got %s", out)
		}
	}
	got, err := harnvm.ReadSkills([]byte(`[{"id":"x","version":2,"name":7},{}]`))
	if err != nil || len(got) != 2 || *got[0].ID != "x" || got[0].Name != nil || len(got[0].Extra) != 1 || got[1].ID != nil {
		t.Fatalf("lenient entries: %+v %v", got, err)
	}
	for in, msg := range map[string]string{
		`"x"`:             "skills/list: host response must be an array or { skills: [...] }",
		`{"skills":{}}`:   "skills/list: host response must be an array or { skills: [...] }",
		`{}`:              "skills/list: unexpected response shape",
		`{"result":[]}`:   "skills/list: unexpected response shape",
		`[1]`:             "skills/list: unexpected response shape",
		`{"skills":[[]]}`: "skills/list: unexpected response shape",
	} {
		if _, err := harnvm.ReadSkills([]byte(in)); !errors.Is(err, harnvm.ErrResponseShape) || err.Error() != msg {
			t.Errorf("%s: got %v, want %q", in, err, msg)
		}
	}
}

func TestReadSkillFlattensTheManifest(t *testing.T) {
	nested := `{"name":"deploy","description":"Ship it","body":"# Deploy runbook\n...","manifest":{"when_to_use":"releases",` +
		`"allowed_tools":["bash","git"],"paths":["infra/**"],"model":"claude-opus-4-7"}}`
	want := nested
	for name, tc := range map[string]struct{ in, want string }{
		"nested (seed)": {nested, want},
		"flattened": {`{"name":"deploy","description":"Ship it","body":"# Deploy runbook\n...","when_to_use":"releases",` +
			`"allowed_tools":["bash","git"],"paths":["infra/**"],"model":"claude-opus-4-7"}`, want},
		"nested wins, flattened fills in": {`{"name":"deploy","description":"Ship it","body":"# Deploy runbook\n...","model":"claude-opus-4-7",` +
			`"paths":["ignored/**"],"manifest":{"when_to_use":"releases","allowed_tools":["bash","git"],"paths":["infra/**"]}}`, want},
		"bare": {`{"name":"n"}`, `{"name":"n","manifest":{"allowed_tools":[],"paths":[]}}`},
		"extras kept where they were": {`{"name":"n","version":3,"manifest":{"tier":"gold","paths":["a",1]}}`,
			`{"name":"n","manifest":{"allowed_tools":[],"paths":["a"],"tier":"gold"},"version":3}`},
		"wrong types are absent": {`{"name":1,"body":"b","when_to_use":[],"manifest":"x"}`, `{"body":"b","manifest":{"allowed_tools":[],"paths":[]}}`},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := harnvm.ReadSkill([]byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if got.WhenToUse != nil || got.AllowedTools != nil || got.Paths != nil || got.Model != nil || got.Manifest == nil {
				t.Errorf("manifest not under manifest: %+v", got)
			}
			out, _ := json.Marshal(got)
			if !wiretest.EqualJSON(t, out, []byte(tc.want)) {
				t.Errorf("got %s", out)
			}
		})
	}
	for _, in := range []string{`[]`, `"deploy"`, `null`, `{"name":"a","name":"b"}`} {
		if _, err := harnvm.ReadSkill([]byte(in)); !errors.Is(err, harnvm.ErrResponseShape) || err.Error() != "skills/fetch: unexpected response shape" {
			t.Errorf("%s: %v", in, err)
		}
	}
}

func TestReadSkillMatches(t *testing.T) {
	cands := []harn.SkillCandidate{{Name: "ship"}, {Name: "review"}, {Name: "deploy"}}
	// The seed's answer, and the same in every shape Harn accepts.
	entries := `[{"name":"ship","score":0.92,"reason":"matched by embedding similarity"}]`
	want := entries
	for name, in := range map[string]string{
		"{matches} (seed)":      `{"matches":` + entries + `}`,
		"bare array":            entries,
		"{skills}":              `{"skills":` + entries + `}`,
		"{result: {matches}}":   `{"result":{"matches":` + entries + `}}`,
		"unknown names ignored": `{"matches":[{"name":"ship","score":0.92,"reason":"matched by embedding similarity"},{"name":"made-up","score":5}]}`,
		"nameless skipped":      `[{"score":3},{"name":""},{"name":7},"ship",{"name":"ship","score":0.92,"reason":"matched by embedding similarity"}]`,
	} {
		got, err := harnvm.ReadSkillMatches([]byte(in), cands)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out, _ := json.Marshal(got)
		if !wiretest.EqualJSON(t, out, []byte(want)) {
			t.Errorf("got %s", out)
		}
	}

	got, err := harnvm.ReadSkillMatches([]byte(`{"matches":[{"name":"review"},{"name":"deploy","score":2,"reason":7},`+
		`{"name":"ship","score":-1,"note":"x"},{"name":"review","score":1.5,"reason":"again"}]}`), cands)
	if err != nil {
		t.Fatal(err)
	}
	out, _ := json.Marshal(got)
	if !wiretest.EqualJSON(t, out, []byte(`[{"name":"deploy","score":2,"reason":"host match"},{"name":"review","score":1.5,"reason":"again"},`+
		`{"name":"ship","score":0,"reason":"host match","note":"x"}]`)) {
		t.Errorf("got %s", out)
	}

	// Without candidates nothing is filtered by name.
	if got, err := harnvm.ReadSkillMatches([]byte(`[{"name":"anything"}]`), nil); err != nil || len(got) != 1 ||
		*got[0].Score != harnvm.DefaultMatchScore || *got[0].Reason != harnvm.DefaultMatchReason {
		t.Fatalf("defaults: %+v %v", got, err)
	}
	for _, in := range []string{`"ship"`, `{}`, `{"matches":{}}`, `{"result":{"skills":[]}}`, `null`, `7`} {
		if _, err := harnvm.ReadSkillMatches([]byte(in), cands); !errors.Is(err, harnvm.ErrResponseShape) {
			t.Errorf("%s: %v", in, err)
		}
	}
}

// FuzzReaders: no input makes a reader panic, and whatever a reader
// accepts satisfies what it promises.
func FuzzReaders(f *testing.F) {
	for _, seed := range []string{
		`{"tools":[{"name":"a","short_description":"d","parameters":{}}]}`, `[{"name":"a","deprecated":true}]`,
		`{"result":{"tools":[]}}`, `{"skills":[{"id":"x"}]}`, `[{"id":"a","name":"b"}]`,
		`{"name":"n","manifest":{"paths":["a"]},"model":"m"}`, `{"matches":[{"name":"ship","score":0.5}]}`,
		`{"result":{"matches":[{"name":"review"}]}}`, `{"skills":[{"name":"ship","score":-3,"reason":"r"}]}`, `[1,{"name":""}]`,
	} {
		f.Add([]byte(seed))
	}
	cands := []harn.SkillCandidate{{Name: "ship"}, {Name: "review"}, {Name: "a"}}
	f.Fuzz(func(t *testing.T, in []byte) {
		if tools, err := harnvm.ReadTools(in); err == nil {
			for _, tl := range tools {
				if tl.Name == "" || tl.Description == nil || tl.Deprecated == nil || (tl.Schema.Kind() != '{' && string(tl.Schema) != "null") {
					t.Fatalf("tool not normalised: %+v", tl)
				}
				if _, err := json.Marshal(tl); err != nil {
					t.Fatalf("normalised tool does not encode: %v", err)
				}
			}
		} else if !errors.Is(err, harnvm.ErrResponseShape) {
			t.Fatalf("untyped error %v", err)
		}
		if refs, err := harnvm.ReadSkills(in); err == nil {
			if _, err := json.Marshal(refs); err != nil {
				t.Fatal(err)
			}
		} else if !errors.Is(err, harnvm.ErrResponseShape) {
			t.Fatalf("untyped error %v", err)
		}
		if s, err := harnvm.ReadSkill(in); err == nil {
			if s.Manifest == nil || s.Manifest.AllowedTools == nil || s.Manifest.Paths == nil || s.WhenToUse != nil || s.Paths != nil {
				t.Fatalf("skill not normalised: %+v", s)
			}
			if _, err := json.Marshal(s); err != nil {
				t.Fatal(err)
			}
		} else if !errors.Is(err, harnvm.ErrResponseShape) {
			t.Fatalf("untyped error %v", err)
		}
		if ms, err := harnvm.ReadSkillMatches(in, cands); err == nil {
			var names []string
			for i, m := range ms {
				if m.Score == nil || m.Reason == nil || *m.Score < 0 || math.IsNaN(*m.Score) || (i > 0 && *ms[i-1].Score < *m.Score) {
					t.Fatalf("matches not normalised: %+v", ms)
				}
				if slices.Contains(names, m.Name) || !slices.ContainsFunc(cands, func(c harn.SkillCandidate) bool { return c.Name == m.Name }) {
					t.Fatalf("match %q repeated or not a candidate", m.Name)
				}
				names = append(names, m.Name)
			}
			if _, err := json.Marshal(ms); err != nil {
				t.Fatal(err)
			}
		} else if !errors.Is(err, harnvm.ErrResponseShape) {
			t.Fatalf("untyped error %v", err)
		}
	})
}
