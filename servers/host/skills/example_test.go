package skills_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/bridgekit/bridgekit/gen/harn"
	"github.com/bridgekit/bridgekit/servers/host/skills"
)

// A folder with one skill, served on a Harn host's handlers and ranked
// for a prompt.
func ExampleSet_Register() {
	dir, _ := os.MkdirTemp("", "skills")
	defer os.RemoveAll(dir)
	_ = os.MkdirAll(filepath.Join(dir, "ship"), 0o755)
	_ = os.WriteFile(filepath.Join(dir, "ship", "SKILL.md"), []byte("---\ndescription: Ship a production release\npaths: [infra/**]\n---\n# Shipping runbook\n"), 0o644)
	set, err := skills.Load(dir)
	if err != nil {
		panic(err)
	}
	var h harn.HostHandlers
	set.Register(&h, nil)
	res, _ := h.SkillMatch(context.Background(), &harn.SkillMatchParams{
		Prompt:       "Ship the new release",
		WorkingFiles: []string{"infra/main.tf"},
		Candidates:   []harn.SkillCandidate{{Name: "ship", Description: "Ship a production release"}, {Name: "review", Description: "Review code"}},
	})
	for _, m := range res.Object.SkillMatches.Matches {
		fmt.Println(m.Name, *m.Reason)
	}
	// Output:
	// ship bm25 on ship, release; infra/main.tf matches infra/**
}
