package skills

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bridgekit/bridgekit/gen/harn"
)

func TestStem(t *testing.T) {
	for _, group := range [][]string{
		{"ship", "ships", "shipped", "shipping"},
		{"release", "released", "releases", "releasing"},
		{"deploy", "deploys", "deployed", "deploying", "deployment", "deployments"},
		{"review", "reviews", "reviewed", "reviewing"},
		{"box", "boxes"},
		{"push", "pushes"},
		{"code", "codes"},
		{"query", "queries"},
		{"document", "documents"},
		{"validate", "validation", "validates"},
	} {
		for _, w := range group[1:] {
			if stem(w) != stem(group[0]) {
				t.Errorf("stem(%q) = %q, stem(%q) = %q", w, stem(w), group[0], stem(group[0]))
			}
		}
	}
	for _, w := range []string{"pass", "fall", "bus", "is"} {
		if got := stem(w); got != w {
			t.Errorf("stem(%q) = %q, want it unchanged", w, got)
		}
	}
}

// The seed's skill/match example: "ship" ranks first with a reason, and a
// candidate that shares no word with the prompt and no path is left out.
func TestRankSeedExample(t *testing.T) {
	p := &harn.SkillMatchParams{
		Strategy:     "host",
		Prompt:       "Ship the new release to production",
		WorkingFiles: []string{"infra/terraform/cluster.tf"},
		Candidates: []harn.SkillCandidate{
			{Name: "ship", Description: "Ship a production release", WhenToUse: "User says ship/release/deploy", Paths: []string{"infra/**", "Dockerfile"}},
			{Name: "review", Description: "Review existing code for correctness", WhenToUse: "User asks to review/audit", Paths: []string{}},
		},
	}
	skills, _ := Load("")
	got := Rank(p, skills)
	if len(got) != 1 || got[0].Name != "ship" || got[0].Score <= pathBonus {
		t.Fatalf("matches %+v", got)
	}
	if r := got[0].Reason; !strings.Contains(r, "bm25 on ship, release, production") || !strings.Contains(r, "infra/terraform/cluster.tf matches infra/**") {
		t.Fatalf("reason %q", r)
	}
}

func TestRankIsDeterministicAndOrdered(t *testing.T) {
	skills, err := Load("testdata/skills")
	if err != nil {
		t.Fatal(err)
	}
	candidates := []harn.SkillCandidate{
		{Name: "ship", Description: "Ship a production release", WhenToUse: "User says ship, release or deploy"},
		{Name: "review", Description: "Review existing code for correctness", WhenToUse: "User asks to review or audit code"},
		{Name: "docs", Description: "Write and update documentation", WhenToUse: "User asks for docs, a README or examples"},
		{Name: "audit", Description: "Audit code", WhenToUse: "security review"},
		{Name: "", Description: "nameless entries are skipped"},
		{Name: "ship", Description: "a second candidate of a name is ignored"},
	}
	p := &harn.SkillMatchParams{Prompt: "Please review this code for correctness, then update the docs", Candidates: candidates}
	first := Rank(p, skills)
	var names []string
	for _, m := range first {
		names = append(names, m.Name)
		if m.Score <= 0 || m.Reason == "" {
			t.Errorf("match %+v", m)
		}
	}
	if len(names) != 3 || names[0] != "review" || !slices.Contains(names, "docs") || !slices.Contains(names, "audit") {
		t.Fatalf("order %q (%+v)", names, first)
	}
	for i := 1; i < len(first); i++ {
		if first[i].Score > first[i-1].Score {
			t.Fatalf("not best first: %+v", first)
		}
	}
	// Candidate order does not change the answer.
	for range 20 {
		shuffled := slices.Clone(candidates[:4])
		rand.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		if again := Rank(&harn.SkillMatchParams{Prompt: p.Prompt, Candidates: shuffled}, skills); !slices.Equal(again, first) {
			t.Fatalf("shuffled candidates ranked %+v, first %+v", again, first)
		}
	}
}

func TestRankUsesTheHostsSkillBody(t *testing.T) {
	skills, err := Load("testdata/skills")
	if err != nil {
		t.Fatal(err)
	}
	// "terraform" and "rollout" appear only in ship's body.
	p := &harn.SkillMatchParams{Prompt: "watch the terraform rollout", Candidates: []harn.SkillCandidate{{Name: "ship"}, {Name: "review"}}}
	got := Rank(p, skills)
	if len(got) != 1 || got[0].Name != "ship" || !strings.Contains(got[0].Reason, "terraform, rollout") {
		t.Fatalf("%+v", got)
	}
	// A working file matching the host skill's paths counts when the
	// candidate names none.
	p = &harn.SkillMatchParams{Prompt: "hello", WorkingFiles: []string{"./Dockerfile"}, Candidates: []harn.SkillCandidate{{Name: "ship"}}}
	if got := Rank(p, skills); len(got) != 1 || got[0].Score != pathBonus {
		t.Fatalf("%+v", got)
	}
	if got := Rank(&harn.SkillMatchParams{Prompt: "anything"}, skills); got == nil || len(got) != 0 {
		t.Fatalf("no candidates: %#v", got)
	}
	// Ties are broken by name.
	p = &harn.SkillMatchParams{Prompt: "alpha", Candidates: []harn.SkillCandidate{{Name: "b", Description: "alpha"}, {Name: "a", Description: "alpha"}}}
	if got := Rank(p, skills); len(got) != 2 || got[0].Name != "a" || got[0].Score != got[1].Score {
		t.Fatalf("%+v", got)
	}
}

// TestRankIsLinear: what a runtime's skill/match may hold costs time
// linear in its size: a prompt of 200,000 distinct words (finding each
// word among the earlier ones took minutes), and 3,000 path patterns
// against 3,000 working files, of which only the first 2 ** 24 segment
// matches are made.
func TestRankIsLinear(t *testing.T) {
	var b strings.Builder
	for i := range 200_000 {
		fmt.Fprintf(&b, "w%dq ", i)
	}
	b.WriteString("deploy")
	pats := make([]string, 3000)
	files := make([]string, 3000)
	for i := range pats {
		pats[i] = fmt.Sprintf("**/p%d/**/x/*.go", i)
		files[i] = fmt.Sprintf("src/a/b/c/d/e/f%d.go", i)
	}
	p := &harn.SkillMatchParams{Prompt: b.String(), WorkingFiles: files, Candidates: []harn.SkillCandidate{
		{Name: "deploy", Description: "deploy the service", Paths: pats},
		{Name: "late", Description: "other", Paths: []string{"src/**"}},
	}}
	began := time.Now()
	got := Rank(p, &Set{ByName: map[string]*Skill{}})
	if d := time.Since(began); d > 5*time.Second {
		t.Fatalf("Rank took %v", d)
	}
	if len(got) != 1 || got[0].Name != "deploy" {
		t.Fatalf("ranked %+v, want deploy alone (its path patterns spent the budget before late's)", got)
	}
}
