package scaffold

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bridgekit/bridgekit/generator/internal/catalogue"
)

// copySpec copies the repository's spec/ into a temporary root.
func copySpec(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	if err := os.CopyFS(filepath.Join(root, "spec"), os.DirFS("../../spec")); err != nil {
		t.Fatal(err)
	}
	return root
}

func TestACPStubsGoIntoAnOverlayOfOurs(t *testing.T) {
	root := copySpec(t)
	vendored, _ := os.ReadFile(filepath.Join(root, "spec/schemas/acp/v1/schema.json"))
	ch, err := Scaffold(root, Request{Catalogue: "acp", Wire: "_example/ping", From: "client", To: "agent", Kind: KindNotification})
	if err != nil {
		t.Fatal(err)
	}
	if ch.Schema != "acp-extensions.schema.json" || ch.Side != "Agent" || ch.Go != "ExamplePing" {
		t.Fatalf("change %+v", ch)
	}
	if now, _ := os.ReadFile(filepath.Join(root, "spec/schemas/acp/v1/schema.json")); !bytes.Equal(now, vendored) {
		t.Fatal("the vendored schema changed")
	}
	c, err := catalogue.Load(filepath.Join(root, "spec/catalogue/acp.json"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Schemas[len(c.Schemas)-1] != "acp-extensions.schema.json" {
		t.Errorf("the overlay file is not listed: %v", c.Schemas)
	}
	m := c.Methods[len(c.Methods)-1]
	if m.Wire != "_example/ping" || m.Kind != catalogue.Notification || m.Result != nil || *m.Params != "acp-extensions.schema.json#/$defs/example_ping_params" {
		t.Errorf("entry %+v", m)
	}
	data, err := os.ReadFile(filepath.Join(root, "spec/schemas/acp-extensions.schema.json"))
	if err != nil || !bytes.Contains(data, []byte(`"example_ping_params": {`)) || bytes.Contains(data, []byte("example_ping_result")) {
		t.Fatalf("overlay file: %v\n%s", err, data)
	}
	// A second method goes into the same file, after the first.
	if _, err := Scaffold(root, Request{Catalogue: "acp", Wire: "_example/pong", From: "agent", To: "client"}); err != nil {
		t.Fatal(err)
	}
	data, _ = os.ReadFile(filepath.Join(root, "spec/schemas/acp-extensions.schema.json"))
	if i, j := bytes.Index(data, []byte("example_ping_params")), bytes.Index(data, []byte("example_pong_result")); i < 0 || j < i {
		t.Errorf("second stubs:\n%s", data)
	}
}

func TestRoleBecomesTheQualifier(t *testing.T) {
	root := copySpec(t)
	ch, err := Scaffold(root, Request{Catalogue: "agentpm-service", Wire: "lookup", From: "harness", To: "service", Role: "knowledge"})
	if err != nil {
		t.Fatal(err)
	}
	c, err := catalogue.Load(ch.Catalogue)
	if err != nil {
		t.Fatal(err)
	}
	m := c.Methods[len(c.Methods)-1]
	if m.Qualifier["service"] != "knowledge" || len(m.Qualifier) != 1 || *m.Result != "agentpm/service.schema.json#/$defs/knowledge_lookup_result" {
		t.Errorf("entry %+v", m)
	}
	// The same wire name for another role is another method.
	if _, err := Scaffold(root, Request{Catalogue: "agentpm-service", Wire: "lookup", Go: "MemoryLookup", From: "harness", To: "service", Role: "memory"}); err != nil {
		t.Fatal(err)
	}
	if _, err := Scaffold(root, Request{Catalogue: "agentpm-service", Wire: "lookup", Go: "Lookup2", From: "harness", To: "service", Role: "knowledge"}); !errors.Is(err, ErrExists) {
		t.Fatalf("the same method again: %v", err)
	}
}

func TestOperationIsAdvertisedLikeItsSiblings(t *testing.T) {
	root := copySpec(t)
	if _, err := Scaffold(root, Request{Catalogue: "harn", Operation: "project.deploy_status"}); err != nil {
		t.Fatal(err)
	}
	c, err := catalogue.Load(filepath.Join(root, "spec/catalogue/harn.json"))
	if err != nil {
		t.Fatal(err)
	}
	var op *catalogue.Operation
	for _, m := range c.Methods {
		if m.Wire == "host/call" {
			op = &m.Operations.Items[len(m.Operations.Items)-1]
		}
	}
	if op == nil || op.Go != "ProjectDeployStatus" || op.Advertise == nil || op.Advertise.Capability != "project" || op.Advertise.Op != "deploy_status" ||
		*op.Args != "harn-host.schema.json#/$defs/project_deploy_status_args" || op.Status != catalogue.Experimental {
		t.Fatalf("operation %+v", op)
	}
	// Several selector members: --match.
	if _, err := Scaffold(root, Request{Catalogue: "agentpm-harness-machine", Match: map[string]string{"role": "knowledge", "method": "lookup"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := Scaffold(root, Request{Catalogue: "agentpm-harness-machine", Match: map[string]string{"role": "knowledge"}}); err == nil || !strings.Contains(err.Error(), "method is missing") {
		t.Fatalf("a partial match: %v", err)
	}
}

func TestAppendDefKeepsTheFile(t *testing.T) {
	src := []byte("{\n  \"title\": \"t\",\n  \"x\": {\"$defs\": {\"inner\": {}}},\n  \"$defs\": {\n    \"a\": {\"type\": \"string\"}\n  },\n  \"tail\": [1, {\"b\": 2}]\n}\n")
	out, err := appendDef(src, "b", `{"type": "object"}`)
	if err != nil {
		t.Fatal(err)
	}
	want := "{\n  \"title\": \"t\",\n  \"x\": {\"$defs\": {\"inner\": {}}},\n  \"$defs\": {\n    \"a\": {\"type\": \"string\"},\n    \"b\": {\"type\": \"object\"}\n  },\n  \"tail\": [1, {\"b\": 2}]\n}\n"
	if string(out) != want {
		t.Fatalf("got\n%s\nwant\n%s", out, want)
	}
	if _, err := appendDef(out, "a", "{}"); !errors.Is(err, ErrExists) {
		t.Fatalf("an existing def: %v", err)
	}
	if _, err := appendDef([]byte(`{"title": "no defs"}`), "a", "{}"); err == nil {
		t.Fatal("a file without $defs must fail")
	}
	empty, err := appendDef([]byte("{\n  \"$defs\": {}\n}\n"), "a", "{}")
	if err != nil || string(empty) != "{\n  \"$defs\": {\n    \"a\": {}\n  }\n}\n" {
		t.Fatalf("empty $defs: %v %q", err, empty)
	}
}

func TestUnexported(t *testing.T) {
	for in, want := range map[string]string{"HostExamplePing": "hostExamplePing", "MCPConfig": "mcpConfig", "ID": "id", "X": "x", "ProjectMCPConfig": "projectMCPConfig"} {
		if got := unexported(in); got != want {
			t.Errorf("unexported(%q) = %q, want %q", in, got, want)
		}
	}
}
