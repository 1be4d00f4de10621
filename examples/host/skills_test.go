package main

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"

	"github.com/bridgekit/bridgekit/gen/harn"
)

func TestExampleSkills(t *testing.T) {
	set, err := loadSkills("example/skills")
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, s := range set.list {
		ids = append(ids, s.ID)
	}
	if !slices.Equal(ids, []string{"docs", "review", "ship"}) {
		t.Fatalf("ids %q", ids)
	}
	ship := set.byID["ship"]
	if ship.Name != "ship" || ship.Description != "Ship a production release" || ship.WhenToUse != "User says ship, release or deploy" ||
		!slices.Equal(ship.AllowedTools, []string{"bash", "git"}) || !slices.Equal(ship.Paths, []string{"infra/**", "Dockerfile"}) ||
		ship.Model != "claude-opus-4-7" || !strings.HasPrefix(ship.Body, "# Shipping runbook\n") {
		t.Fatalf("ship %+v", ship)
	}
	if d := set.byID["docs"].Description; d != "Write and update documentation for the project's users" {
		t.Fatalf("folded description %q", d)
	}
	if r := set.byID["review"]; !slices.Equal(r.AllowedTools, []string{"read"}) || r.Paths != nil {
		t.Fatalf("review %+v", r)
	}
	if s, err := loadSkills(""); err != nil || len(s.list) != 0 {
		t.Fatalf("no skills folder: %v", err)
	}
}

func TestSkillFilesAndIDs(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "ops", "review.md"), "# Review\n\nLook for bugs first.\n")
	writeFile(t, filepath.Join(dir, "ops", "deploy", "SKILL.md"), "---\r\nname: deploy\r\ndescription: 'It''s shipping'\r\n---\r\nbody\r\n")
	writeFile(t, filepath.Join(dir, "notes.txt"), "not a skill")
	set, err := loadSkills(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(set.list) != 2 {
		t.Fatalf("%d skills", len(set.list))
	}
	r := set.byID["ops/review"]
	if r == nil || r.Name != "review" || r.Description != "Look for bugs first." || r.Body != "# Review\n\nLook for bugs first.\n" {
		t.Fatalf("a skill without front matter: %+v", r)
	}
	d := set.byID["ops/deploy"]
	if d == nil || d.Description != "It's shipping" || d.Body != "body\n" {
		t.Fatalf("CRLF front matter: %+v", d)
	}

	// Two files for one id, and SKILL.md at the top.
	writeFile(t, filepath.Join(dir, "ops", "deploy.md"), "x")
	if _, err := loadSkills(dir); err == nil || !strings.Contains(err.Error(), `"ops/deploy"`) {
		t.Errorf("duplicate id: %v", err)
	}
	top := t.TempDir()
	writeFile(t, filepath.Join(top, "SKILL.md"), "x")
	if _, err := loadSkills(top); err == nil {
		t.Error("SKILL.md at the top of the folder is accepted")
	}
	if _, err := loadSkills(filepath.Join(dir, "missing")); err == nil || !strings.Contains(err.Error(), "skills") {
		t.Errorf("a missing folder: %v, want an error naming the skills folder", err)
	}
	// A folder reached through a symlink is walked (WalkDir alone would
	// see the link, not the folder behind it).
	real, link := t.TempDir(), filepath.Join(t.TempDir(), "skills")
	writeFile(t, filepath.Join(real, "ship", "SKILL.md"), "Ship it.\n")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	if set, err := loadSkills(link); err != nil || len(set.list) != 1 || set.byID["ship"] == nil {
		t.Errorf("a symlinked skills folder: %v, %+v; want its skill ship", err, set)
	}
	// A file is not a folder of skills: it must not become a skill with
	// an empty id.
	file := filepath.Join(dir, "ops", "review.md")
	if set, err := loadSkills(file); err == nil || !strings.Contains(err.Error(), "not a directory") {
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
		s, err := parseSkill("id", "---\n"+tc.text+"---\nbody")
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
	if _, err := parseSkill("id", "---\nname: x\n"); err == nil {
		t.Error("unclosed front matter is accepted")
	}
	if s, err := parseSkill("id", "---\nname: x\n---"); err != nil || s.Body != "" {
		t.Errorf("front matter ending the file: %+v %v", s, err)
	}
}

func TestFetchSkill(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "x.md"), "---\nname: x\ndescription: d\nversion: 2\ntags: [a]\n---\nbody\n")
	writeFile(t, filepath.Join(dir, "bare.md"), "just text\n")
	a, _ := testApp(t, nil)
	var err error
	if a.skills, err = loadSkills(dir); err != nil {
		t.Fatal(err)
	}
	fetch := func(id string) (*harn.Skill, error) {
		return a.fetchSkill(context.Background(), &harn.SkillsFetchParams{ID: id})
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
	if _, err := fetch("nope"); rpcCode(err) != -32602 {
		t.Errorf("unknown id: %v", err)
	}
	refs, _ := a.listSkills(context.Background(), nil)
	got, _ = json.Marshal(refs)
	if !equalJSON(t, got, []byte(`[{"id":"bare","name":"bare","description":"just text","source":"host"},{"id":"x","name":"x","description":"d","source":"host"}]`)) {
		t.Errorf("skills/list: %s", got)
	}
}
