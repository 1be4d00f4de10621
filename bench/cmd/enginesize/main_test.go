package main

import (
	"os"
	"strings"
	"testing"
)

// docs/architecture.md shows bridgekit's current size: its rows are what enginesize counts now (the peers'
// rows, which need the module cache, are not recounted here).
func TestDocIsCurrent(t *testing.T) {
	doc, err := os.ReadFile("../../../docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range strings.SplitAfter(ownRows("../../.."), "\n") {
		if r != "" && !strings.Contains(string(doc), r) {
			t.Errorf("docs/architecture.md lacks the row\n%s\nrun: cd bench && go run ./cmd/enginesize -doc ../docs/architecture.md", r)
		}
	}
}
