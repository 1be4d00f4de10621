package codegen

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A broken spec fails with one Error per problem, naming its file and the
// JSON pointer of what is wrong, and nothing is written.
func TestGenerateReportsFileAndPointer(t *testing.T) {
	for name, tc := range map[string]struct {
		file, old, new string
		want           Error
	}{
		"bad kind": {"catalogue/harn.json", `"kind": "request"`, `"kind": "call"`,
			Error{File: "spec/catalogue/harn.json", Pointer: "/methods/0", Message: `kind "call" is not one of`}},
		"dangling params": {"catalogue/harn.json", `"params": "harn-host.schema.json#/$defs/host_capabilities_params"`, `"params": "harn-host.schema.json#/$defs/nosuch"`,
			Error{File: "spec/catalogue/harn.json", Pointer: "/methods/0/params", Message: "no such $defs entry"}},
		"unsupported keyword": {"schemas/harn-host.schema.json", `"type": "object"`, `"type": "object", "patternProperties": {}`,
			Error{File: "spec/schemas/harn-host.schema.json", Pointer: "/$defs/host_call_params", Message: `unsupported schema keyword "patternProperties"`}},
		"stray annotation": {"catalogue/acp.json", `"session/cancel": {`, `"session/nope": {`,
			Error{File: "spec/catalogue/acp.json", Pointer: "/derive", Message: `annotation for "session/nope" matches no derived method`}},
		"unused override": {"overrides.json", `"acp/v1/schema.json#/$defs/AuthMethod": {`, `"acp/v1/schema.json#/$defs/NoSuch": {`,
			Error{File: "spec/overrides.json", Pointer: "/unions/acp~1v1~1schema.json#~1$defs~1NoSuch", Message: "matches no schema node"}},
		"represent entry that does not fit": {"overrides.json", `"members": ["kind", "status", "content", "locations"]`, `"members": ["kind", "title"]`,
			Error{File: "spec/overrides.json", Pointer: "/represent/acp~1v1~1schema.json#~1$defs~1ToolCall", Message: `member "title" must be optional in both ToolCall and ToolCallUpdate`}},
	} {
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			if err := os.CopyFS(filepath.Join(root, "spec"), os.DirFS("../../spec")); err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(root, "spec", tc.file)
			data, err := os.ReadFile(p)
			if err != nil || !strings.Contains(string(data), tc.old) {
				t.Fatalf("%s lacks %q (%v)", tc.file, tc.old, err)
			}
			if err := os.WriteFile(p, []byte(strings.Replace(string(data), tc.old, tc.new, 1)), 0o644); err != nil {
				t.Fatal(err)
			}
			rep, err := Generate(context.Background(), Options{Root: root})
			var es Errors
			if !errors.As(err, &es) {
				t.Fatalf("Generate: %v (%T), want Errors", err, err)
			}
			found := false
			for _, e := range es {
				found = found || e.File == tc.want.File && e.Pointer == tc.want.Pointer && strings.Contains(e.Message, tc.want.Message)
			}
			if !found {
				t.Errorf("errors %q lack %s#%s: ...%s...", es.Error(), tc.want.File, tc.want.Pointer, tc.want.Message)
			}
			if rep != nil && len(rep.Written) > 0 {
				t.Errorf("wrote %v despite the errors", rep.Written)
			}
			if _, err := os.Stat(filepath.Join(root, "gen")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("gen/ exists after a failed generate: %v", err)
			}
		})
	}
}

// Generate reports what it read and wrote, and a second run finds every
// file unchanged.
func TestGenerateReport(t *testing.T) {
	if testing.Short() {
		t.Skip("generates every package twice")
	}
	root := t.TempDir()
	if err := os.CopyFS(filepath.Join(root, "spec"), os.DirFS("../../spec")); err != nil {
		t.Fatal(err)
	}
	first, err := Generate(context.Background(), Options{Root: root})
	if err != nil {
		t.Fatal(err)
	}
	cats, _ := filepath.Glob("../../spec/catalogue/*.json")
	if first.Catalogues != len(cats) || first.SchemaFiles == 0 || first.Packages == 0 || len(first.Written) == 0 || len(first.Unchanged) != 0 {
		t.Fatalf("first run: %+v", first)
	}
	second, err := Generate(context.Background(), Options{Root: root})
	if err != nil {
		t.Fatal(err)
	}
	if len(second.Written) != 0 || len(second.Unchanged) != len(first.Written) || len(second.Removed) != 0 {
		t.Errorf("second run wrote %v, %d unchanged of %d", second.Written, len(second.Unchanged), len(first.Written))
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Generate(ctx, Options{Root: root}); !errors.Is(err, context.Canceled) {
		t.Errorf("Generate with an ended context: %v", err)
	}
}

// Methods lists every catalogue's methods, derived ones included, with
// their schema locations, from an FS.
func TestMethodsFromFS(t *testing.T) {
	s, err := LoadFS(os.DirFS("../../spec"))
	if err != nil {
		t.Fatal(err)
	}
	ms, err := s.Methods()
	if err != nil {
		t.Fatal(err)
	}
	var prompt, hostCall *MethodSchema
	for i, m := range ms {
		switch {
		case m.Package == "acp" && m.Wire == "session/prompt":
			prompt = &ms[i]
		case m.Package == "harn" && m.Wire == "host/call":
			hostCall = &ms[i]
		}
	}
	if prompt == nil || prompt.Params != "acp/v1/schema.json#/$defs/PromptRequest" || prompt.Result != "acp/v1/schema.json#/$defs/PromptResponse" || prompt.From != "client" {
		t.Errorf("session/prompt: %+v", prompt)
	}
	if hostCall == nil || hostCall.Params != "harn-host.schema.json#/$defs/host_call_params" || hostCall.Result != "" {
		t.Errorf("host/call: %+v", hostCall)
	}
}
