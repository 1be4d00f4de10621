package skills

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"

	"github.com/bridgekit/bridgekit/gen/harn"
	"github.com/bridgekit/bridgekit/runtime/rpc"
	"github.com/bridgekit/bridgekit/runtime/wire/wiretest"
)

func TestSkillFilesAndIDs(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "ops", "review.md"), "# Review\n\nLook for bugs first.\n")
	writeFile(t, filepath.Join(dir, "ops", "deploy", "SKILL.md"), "---\r\nname: deploy\r\ndescription: 'It''s shipping'\r\n---\r\nbody\r\n")
	writeFile(t, filepath.Join(dir, "notes.txt"), "not a skill")
	set, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(set.List) != 2 {
		t.Fatalf("%d skills", len(set.List))
	}
	r := set.ByID["ops/review"]
	if r == nil || r.Name != "review" || r.Description != "Look for bugs first." || r.Body != "# Review\n\nLook for bugs first.\n" {
		t.Fatalf("a skill without front matter: %+v", r)
	}
	d := set.ByID["ops/deploy"]
	if d == nil || d.Description != "It's shipping" || d.Body != "body\n" {
		t.Fatalf("CRLF front matter: %+v", d)
	}

	// Two files for one id, and SKILL.md at the top.
	writeFile(t, filepath.Join(dir, "ops", "deploy.md"), "x")
	if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), `"ops/deploy"`) {
		t.Errorf("duplicate id: %v", err)
	}
	top := t.TempDir()
	writeFile(t, filepath.Join(top, "SKILL.md"), "x")
	if _, err := Load(top); err == nil {
		t.Error("SKILL.md at the top of the folder is accepted")
	}
	if _, err := Load(filepath.Join(dir, "missing")); err == nil || !strings.Contains(err.Error(), "skills") {
		t.Errorf("a missing folder: %v, want an error naming the skills folder", err)
	}
	// A folder reached through a symlink is walked (WalkDir alone would
	// see the link, not the folder behind it).
	real, link := t.TempDir(), filepath.Join(t.TempDir(), "skills")
	writeFile(t, filepath.Join(real, "ship", "SKILL.md"), "Ship it.\n")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	if set, err := Load(link); err != nil || len(set.List) != 1 || set.ByID["ship"] == nil {
		t.Errorf("a symlinked skills folder: %v, %+v; want its skill ship", err, set)
	}
	// A file is not a folder of skills: it must not become a skill with
	// an empty id.
	file := filepath.Join(dir, "ops", "review.md")
	if set, err := Load(file); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("a skill file as the folder: %v, %+v; want an error saying it is not a directory", err, set)
	}
}

func TestFrontMatter(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		want       string // the skill's fields as JSON
		err        string
	}{
		{name: "inline list and quotes", text: "name: \"a \\\"b\\\"\" # comment\nallowed_tools: [bash, 'git', \"go\"]\npaths: []\n",
			want: `{"Name":"a \"b\"","Description":"body","AllowedTools":["bash","git","go"],"Paths":[]}`},
		{name: "block list", text: "name: x\npaths:\n  - src/**   # sources\n  - \"docs/**\"\n\n",
			want: `{"Name":"x","Description":"body","Paths":["src/**","docs/**"]}`},
		{name: "literal block", text: "name: x\ndescription: |\n  one\n    two\n\n  three\nmodel: m\n",
			want: `{"Name":"x","Description":"one\n  two\n\nthree","Model":"m"}`},
		{name: "folded block", text: "name: x\nwhen_to_use: >\n  a\n  b\n\n  c\n",
			want: `{"Name":"x","Description":"body","WhenToUse":"a b\nc"}`},
		{name: "scalar paths and extra keys", text: "name: x\npaths: src/**\nversion: 2\ntags: [a, b]\n",
			want: `{"Name":"x","Description":"body","Paths":["src/**"],"Extra":{"tags":["a","b"],"version":"2"}}`},
		{name: "hash inside a value", text: "name: c#\ndescription: \"a # b\"\n",
			want: `{"Name":"c#","Description":"a # b"}`},
		{name: "indented key", text: "  name: x\n", err: "unexpected indentation"},
		{name: "no colon", text: "name x\n", err: `want "key: value"`},
		{name: "twice", text: "name: x\nname: y\n", err: "name is set twice"},
		{name: "open quote", text: "name: \"x\n", err: "unterminated quoted string"},
		{name: "continued", text: "name: x\ndescription: one\n  two\n", err: "use > or |"},
		{name: "open list", text: "name: x\npaths: [a, b\n", err: "end on its line"},
		{name: "not an item", text: "name: x\npaths:\n  a\n", err: `want "- item"`},
		{name: "list as name", text: "name: [a]\n", err: "name: want a single value"},
		{name: "empty name", text: "name: \"\"\n", err: "name is empty"},
	} {
		s, err := Parse("id", "---\n"+tc.text+"---\nbody")
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: %v, want an error saying %q", tc.name, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if s.Body != "body" {
			t.Errorf("%s: body %q", tc.name, s.Body)
		}
		s.ID, s.Body = "", ""
		got, _ := json.Marshal(s, json.OmitZeroStructFields(true))
		if !equalJSON(t, got, []byte(tc.want)) {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
	if _, err := Parse("id", "---\nname: x\n"); err == nil {
		t.Error("unclosed front matter is accepted")
	}
	if s, err := Parse("id", "---\nname: x\n---"); err != nil || s.Body != "" {
		t.Errorf("front matter ending the file: %+v %v", s, err)
	}
}

func TestFetchSkill(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "x.md"), "---\nname: x\ndescription: d\nversion: 2\ntags: [a]\n---\nbody\n")
	writeFile(t, filepath.Join(dir, "bare.md"), "just text\n")
	set, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	fetch := func(id string) (*harn.Skill, error) {
		return set.Fetch(context.Background(), &harn.SkillsFetchParams{ID: id})
	}
	doc, err := fetch("x")
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(doc)
	want := `{"name":"x","description":"d","body":"body\n","manifest":{"when_to_use":"","allowed_tools":[],"paths":[],"version":"2","tags":["a"]}}`
	if !equalJSON(t, got, []byte(want)) {
		t.Errorf("skills/fetch x: %s, want %s", got, want)
	}
	doc, _ = fetch("bare")
	if got, _ := json.Marshal(doc); !equalJSON(t, got, []byte(`{"name":"bare","description":"just text","body":"just text\n","manifest":{"when_to_use":"","allowed_tools":[],"paths":[]}}`)) {
		t.Errorf("skills/fetch bare: %s", got)
	}
	if _, err := fetch("nope"); !isCode(err, -32602) {
		t.Errorf("unknown id: %v", err)
	}
	refs, _ := set.ListRefs(context.Background(), nil)
	got, _ = json.Marshal(refs)
	if !equalJSON(t, got, []byte(`[{"id":"bare","name":"bare","description":"just text","source":"host"},{"id":"x","name":"x","description":"d","source":"host"}]`)) {
		t.Errorf("skills/list: %s", got)
	}
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func equalJSON(t *testing.T, a, b []byte) bool { return wiretest.EqualJSON(t, a, b) }

func isCode(err error, code int64) bool {
	e, ok := errors.AsType[*rpc.Error](err)
	return ok && e.Code == code
}
