package main

import (
	"context"
	"github.com/bridgekit/bridgekit/servers/host/permission"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/bridgekit/bridgekit/gen/acp"
	"github.com/bridgekit/bridgekit/gen/harn"
	"github.com/bridgekit/bridgekit/runtime/wire"
)

func TestPolicyErrors(t *testing.T) {
	dir := t.TempDir()
	for name, tc := range map[string]struct{ text, want string }{
		"decision":  {`{"permissions": [{"id": "r", "decision": "maybe"}]}`, `r: decision must be "allow" or "deny"`},
		"kind":      {`{"permissions": [{"kinds": ["write"], "decision": "allow"}]}`, `permissions[0]: "write" is not an ACP tool kind`},
		"tool glob": {`{"permissions": [{"tools": ["["], "decision": "allow"}]}`, "syntax error in pattern"},
		"fs glob":   {`{"fs": {"read": ["a/["]}}`, "fs: pattern"},
		"empty cmd": {`{"terminal": {"allow": ["  "]}}`, "empty command pattern"},
		// Path patterns match workspace-relative paths: these could never
		// match anything, so the rule would silently do nothing.
		"absolute fs":   {`{"fs": {"read": ["/etc/**"]}}`, `fs: pattern "/etc/**": path patterns are relative to the workspace`},
		"dotdot fs":     {`{"fs": {"write": ["../**"]}}`, `fs: pattern "../**"`},
		"dot rule path": {`{"permissions": [{"paths": ["./src/**"], "decision": "allow"}]}`, `permissions[0]: pattern "./src/**"`},
		"empty element": {`{"permissions": [{"paths": ["src//x"], "decision": "deny"}]}`, `pattern "src//x"`},
		"unknown":       {`{"permission": []}`, `unknown object member name "permission"`},
		"unknown rule":  {`{"permissions": [{"decision": "allow", "path": ["x"]}]}`, `unknown object member name "path"`},
	} {
		path := writeFile(t, filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".json"), tc.text)
		if _, err := loadPolicy(path); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error saying %q", name, err, tc.want)
		}
	}
	if _, err := loadPolicy("example/policy.json"); err != nil {
		t.Fatal(err)
	}
}

// toolCall builds a permission request's tool call.
func toolCall(title string, kind acp.ToolKind, harnTool string, raw string, locations ...string) *acp.ToolCallUpdate {
	tc := &acp.ToolCallUpdate{ToolCallID: "c", Title: wire.Some(title), RawInput: jsontext.Value(raw)}
	if kind != "" {
		tc.Kind = wire.Some(kind)
	}
	if harnTool != "" {
		if err := harn.SetMeta(&tc.Meta, &harn.ToolLifecycle{ToolName: &harnTool}); err != nil {
			panic(err)
		}
	}
	var locs []acp.ToolCallLocation
	for _, l := range locations {
		locs = append(locs, acp.ToolCallLocation{Path: l})
	}
	if locs != nil {
		tc.Locations = wire.Some(locs)
	}
	return tc
}

// harnOptions are the options a Harn runtime offers.
var harnOptions = []acp.PermissionOption{
	{OptionID: "allow", Name: "Allow", Kind: acp.PermissionOptionKindAllowOnce},
	{OptionID: "reject", Name: "Reject", Kind: acp.PermissionOptionKindRejectOnce},
}

// decide asks the app's session/request_permission handler about tc and
// reports whether it granted, with the reason it rendered.
func decide(t *testing.T, a *app, tc *acp.ToolCallUpdate) bool {
	t.Helper()
	res, err := a.perms.Handle(context.Background(), &acp.RequestPermissionRequest{SessionID: "s", ToolCall: *tc, Options: harnOptions})
	if err != nil {
		t.Fatal(err)
	}
	return permission.Granted(res)
}

// The example's policy file, through the app: its rules are
// servers/host/permission's, its paths resolved by the workspace (links
// included), and a request is decided on the tool call merged with its
// earlier updates.
func TestPermissionDecisions(t *testing.T) {
	pol, err := loadPolicy("example/policy.json")
	if err != nil {
		t.Fatal(err)
	}
	a, out := testApp(t, pol)
	root := a.ws.Dir()
	if err := os.Mkdir(filepath.Join(root, "src"), 0o755); err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	// A symlink inside the workspace that points out of it.
	if err := os.Symlink(outside, filepath.Join(root, "src", "escape")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		tc   *acp.ToolCallUpdate
		want bool
		rule string
	}{
		{"edit in src", toolCall("edit_file", acp.ToolKindEdit, "", `{"path":"src/main.go"}`), true, "(rule edit-src)"},
		{"edit by Harn tool name", toolCall("Edit main.go", acp.ToolKindEdit, "write_file", "", filepath.Join(root, "src/main.go")), true, "(rule edit-src)"},
		{"title is not the Harn tool name", toolCall("edit_file", acp.ToolKindEdit, "patch", `{"path":"src/main.go"}`), false, "(no rule allows it)"},
		{"edit outside src", toolCall("edit_file", acp.ToolKindEdit, "", `{"path":"README.md"}`), false, "(no rule allows it)"},
		{"some paths outside src", toolCall("edit_file", acp.ToolKindEdit, "", `{"paths":["src/a.go","go.mod"]}`), false, "(no rule allows it)"},
		{"edit without paths", toolCall("edit_file", acp.ToolKindEdit, "", `{}`), false, "(no rule allows it)"},
		{"edit through a symlink out", toolCall("edit_file", acp.ToolKindEdit, "", `{"file_path":"src/escape/x.go"}`), false, "(no rule allows it)"},
		{"edit with ..", toolCall("edit_file", acp.ToolKindEdit, "", `{"path":"src/../../x.go"}`), false, "(no rule allows it)"},
		{"read anywhere inside", toolCall("read_file", acp.ToolKindRead, "", `{"path":"docs/a.md"}`), true, "(rule read-anything)"},
		{"read outside", toolCall("read_file", acp.ToolKindRead, "", "", "/etc/passwd"), false, "(no rule allows it)"},
		{"delete", toolCall("delete_file", acp.ToolKindDelete, "", `{"path":"src/a.go"}`), false, "(rule never-delete)"},
		{"execute", toolCall("bash", acp.ToolKindExecute, "", `{"command":"ls"}`), false, "(no rule allows it)"},
		{"no kind", toolCall("edit_file", "", "", `{"path":"src/a.go"}`), false, "(no rule allows it)"},
	} {
		tc.tc.ToolCallID = acp.ToolCallID(tc.name)
		if got := decide(t, a, tc.tc); got != tc.want {
			t.Errorf("%s: granted %v, want %v", tc.name, got, tc.want)
		}
	}
	text := rendered(a, out)
	for _, want := range []string{
		`permission "edit_file" (edit) src/main.go: allowed (rule edit-src) -> option "allow"`,
		`permission "delete_file" (delete) src/a.go: denied (rule never-delete) -> option "reject"`,
		`permission "read_file" (read) /etc/passwd: denied (no rule allows it) -> option "reject"`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("rendering lacks %q:\n%s", want, text)
		}
	}
}

// The request is decided on the whole tool call: claude-code-acp sends its
// permission request without the kind (and paths) its tool_call carried,
// and a deny rule sees what an earlier tool_call_update added.
func TestPermissionSeesTheTrackedToolCall(t *testing.T) {
	pol, err := loadPolicy("example/policy.json")
	if err != nil {
		t.Fatal(err)
	}
	pol.Permissions = append([]permission.Rule{{ID: "no-secrets", Paths: []string{"secrets/**"}, Decision: permission.DecisionDeny}}, pol.Permissions...)
	a, out := testApp(t, pol)
	update := a.client().SessionUpdate
	notify := func(raw string) {
		t.Helper()
		var n acp.SessionNotification
		if err := json.Unmarshal([]byte(raw), &n); err != nil {
			t.Fatal(err)
		}
		if err := update(context.Background(), &n); err != nil {
			t.Fatal(err)
		}
	}
	bare := func(id string) *acp.ToolCallUpdate {
		return &acp.ToolCallUpdate{ToolCallID: acp.ToolCallID(id), Title: wire.Some("edit_file")}
	}
	if decide(t, a, bare("w1")) {
		t.Fatal("a bare request with nothing tracked is granted")
	}
	notify(`{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"w2","title":"edit_file","kind":"edit","status":"pending","locations":[{"path":"src/new.go"}],"rawInput":{"file_path":"src/new.go"}}}`)
	if !decide(t, a, bare("w2")) {
		t.Error("a request without kind whose tool_call was an edit in src is denied")
	}
	notify(`{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"w3","title":"edit_file","kind":"edit","status":"pending","rawInput":{"file_path":"src/a.go"}}}`)
	notify(`{"sessionId":"s","update":{"sessionUpdate":"tool_call_update","toolCallId":"w3","rawInput":{"target":"secrets/key"}}}`)
	if decide(t, a, bare("w3")) {
		t.Error("a deny rule missed the path an earlier tool_call_update named")
	}
	notify(`{"sessionId":"s","update":{"sessionUpdate":"tool_call_update","toolCallId":"w2","status":"completed"}}`)
	if decide(t, a, bare("w2")) {
		t.Error("a completed tool call is still tracked")
	}
	if text := rendered(a, out); !strings.Contains(text, `permission "edit_file" (edit) src/new.go: allowed (rule edit-src)`) {
		t.Errorf("the merged call is not rendered:\n%s", text)
	}
}

func selected(res *acp.RequestPermissionResponse) string {
	switch {
	case res.Outcome.Selected != nil:
		return string(res.Outcome.Selected.OptionID)
	case res.Outcome.Cancelled != nil:
		return "cancelled"
	}
	return "?"
}

// The permission handler fails closed: a panic while deciding denies, and
// after the host cancelled the prompt every request is "cancelled".
func TestRequestPermissionFailsClosed(t *testing.T) {
	pol, err := loadPolicy("example/policy.json")
	if err != nil {
		t.Fatal(err)
	}
	a, out := testApp(t, pol)
	req := &acp.RequestPermissionRequest{SessionID: "s", ToolCall: *toolCall("edit_file", acp.ToolKindEdit, "", `{"path":"src/main.go"}`), Options: harnOptions}
	res, err := a.perms.Handle(context.Background(), req)
	if err != nil || selected(res) != "allow" {
		t.Fatalf("allowed edit: %+v %v", res, err)
	}
	broken := &app{policy: a.policy, render: a.render, log: a.log}
	broken.perms = &permission.Host{Observe: broken.renderPermission, Logger: a.log} // no policy: deciding panics
	res, err = broken.perms.Handle(context.Background(), req)
	if err != nil || selected(res) != "reject" {
		t.Fatalf("a panic while deciding answered %+v %v, want the reject option", res, err)
	}
	a.perms.Cancel()
	res, err = a.perms.Handle(context.Background(), req)
	if err != nil || selected(res) != "cancelled" {
		t.Fatalf("after cancelling: %+v %v", res, err)
	}
	text := rendered(a, out)
	for _, want := range []string{
		`permission "edit_file" (edit) src/main.go: allowed (rule edit-src) -> option "allow"`,
		`permission: denied (the host failed to decide: runtime error`,
		`permission "edit_file" (edit) src/main.go: denied (the prompt is being cancelled) -> cancelled`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("rendering lacks %q:\n%s", want, text)
		}
	}
}
