package acp_test

import (
	"testing"

	"github.com/go-json-experiment/json"

	"github.com/bridgekit/bridgekit/gen/acp"
)

// Getters of a struct member with a schema default return a pointer, so
// they chain; a nil or absent member gives the schema's default.
func TestGettersChain(t *testing.T) {
	var caps *acp.ClientCapabilities
	if caps.GetFs().GetReadTextFile() {
		t.Fatal("nil capabilities read as readTextFile true")
	}
	if err := json.Unmarshal([]byte(`{"fs":{"readTextFile":true}}`), &caps); err != nil {
		t.Fatal(err)
	}
	if !caps.GetFs().GetReadTextFile() || caps.GetFs().GetWriteTextFile() {
		t.Fatalf("GetFs() = %+v, want readTextFile only", caps.GetFs())
	}
	if caps.GetFs() != caps.Fs {
		t.Fatal("GetFs of a present member is not the member itself")
	}
	var agent acp.AgentCapabilities
	if agent.GetPromptCapabilities().GetImage() {
		t.Fatal("absent promptCapabilities read as image true")
	}
	// The default is a fresh copy: changing it changes nothing else.
	agent.GetPromptCapabilities().Image = ptr(true)
	if agent.GetPromptCapabilities().GetImage() || agent.PromptCapabilities != nil {
		t.Fatal("a default returned by a getter was shared")
	}
}

func ptr[T any](v T) *T { return &v }
