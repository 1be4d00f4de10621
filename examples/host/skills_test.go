package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/bridgekit/bridgekit/servers/host/skills"
)

// The example's skills folder loads as the README says.
func TestExampleSkills(t *testing.T) {
	set, err := skills.Load("example/skills")
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, s := range set.List {
		ids = append(ids, s.ID)
	}
	if !slices.Equal(ids, []string{"docs", "review", "ship"}) {
		t.Fatalf("ids %q", ids)
	}
	ship := set.ByID["ship"]
	if ship.Name != "ship" || ship.Description != "Ship a production release" || ship.WhenToUse != "User says ship, release or deploy" ||
		!slices.Equal(ship.AllowedTools, []string{"bash", "git"}) || !slices.Equal(ship.Paths, []string{"infra/**", "Dockerfile"}) ||
		ship.Model != "claude-opus-4-7" || !strings.HasPrefix(ship.Body, "# Shipping runbook\n") {
		t.Fatalf("ship %+v", ship)
	}
	if d := set.ByID["docs"].Description; d != "Write and update documentation for the project's users" {
		t.Fatalf("folded description %q", d)
	}
	if r := set.ByID["review"]; !slices.Equal(r.AllowedTools, []string{"read"}) || r.Paths != nil {
		t.Fatalf("review %+v", r)
	}
	if s, err := skills.Load(""); err != nil || len(s.List) != 0 {
		t.Fatalf("no skills folder: %v", err)
	}
}
