package main

import (
	"bytes"
	stdjson "encoding/json"
	"fmt"
	"os"
	"reflect"
	"slices"
	"sort"
	"testing"

	"github.com/go-json-experiment/json"
	invopop "github.com/invopop/jsonschema"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/bridgekit/bridgekit/gen/harn"
)

// The spec's shell-discovery schema is written independently of Harn's. It
// must accept and reject exactly what Harn's accepts and rejects, and so must
// the generated Go decoders. Each base document is mutated systematically
// (members removed, replaced by every JSON kind, extra members added, array
// elements of the wrong kind) and the three verdicts are compared.

const (
	ourSchema      = "../spec/schemas/host-shell-discovery.schema.json"
	upstreamSchema = "../../shared/fixtures/harn/upstream/spec/schemas/host-shell-discovery.schema.json"
)

var shellDoc = map[string]any{
	"id": "zsh", "label": "zsh", "path": "/bin/zsh", "platform": "darwin", "available": true,
	"supports_login": true, "supports_interactive": true, "default_args": []any{"-c"},
	"login_args": []any{"-l", "-c"}, "source": "env",
}

var equivalence = []struct {
	def  string
	goTy func() any
	base []any
}{
	{"shell", func() any { return new(harn.Shell) }, []any{shellDoc}},
	{"list_shells_response", func() any { return new(harn.ListShellsResponse) }, []any{
		map[string]any{"shells": []any{shellDoc}, "default_shell_id": "zsh"},
		map[string]any{"shells": []any{}, "default_shell_id": nil},
	}},
	{"shell_invocation_request", func() any { return new(harn.ShellInvocationRequest) }, []any{
		map[string]any{"shell_id": "zsh", "command": "printf ok", "login": false, "interactive": false},
		map[string]any{"shell": shellDoc, "command": "ls"},
		map[string]any{},
	}},
	{"shell_invocation_response", func() any { return new(harn.ShellInvocationResponse) }, []any{
		map[string]any{"program": "/bin/zsh", "args": []any{"-c", "printf ok"}, "command_arg_index": 1, "shell": shellDoc},
	}},
}

var replacements = []any{nil, 1, -1, 1.5, "x", "", true, []any{}, map[string]any{}, []any{"x"}, []any{1}}

// mutate returns doc with every single-step change applied at every path.
func mutate(doc any) []any {
	var out []any
	switch d := doc.(type) {
	case map[string]any:
		withExtra := clone(d).(map[string]any)
		withExtra["extra"] = 1
		out = append(out, withExtra)
		for _, k := range sortedKeys(d) {
			del := clone(d).(map[string]any)
			delete(del, k)
			out = append(out, del)
			for _, r := range replacements {
				m := clone(d).(map[string]any)
				m[k] = r
				out = append(out, m)
			}
			for _, sub := range mutate(d[k]) {
				m := clone(d).(map[string]any)
				m[k] = sub
				out = append(out, m)
			}
		}
	case []any:
		for _, extra := range []any{1, "s", nil} {
			out = append(out, append(clone(d).([]any), extra))
		}
		for i := range d {
			for _, sub := range mutate(d[i]) {
				a := clone(d).([]any)
				a[i] = sub
				out = append(out, a)
			}
		}
	}
	return out
}

func clone(v any) any {
	data, _ := stdjson.Marshal(v)
	var out any
	_ = stdjson.Unmarshal(data, &out)
	return out
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func TestSpecSchemaMatchesUpstream(t *testing.T) {
	c := jsonschema.NewCompiler()
	total := 0
	for _, tc := range equivalence {
		ours, err := c.Compile(ourSchema + "#/$defs/" + tc.def)
		if err != nil {
			t.Fatal(err)
		}
		theirs, err := c.Compile(upstreamSchema + "#/$defs/" + tc.def)
		if err != nil {
			missingShared(t, err)
		}
		for _, base := range tc.base {
			docs := append([]any{base}, mutate(base)...)
			for _, doc := range docs {
				total++
				data, _ := stdjson.Marshal(doc)
				v, _ := jsonschema.UnmarshalJSON(bytes.NewReader(data))
				want := theirs.Validate(v) == nil
				if got := ours.Validate(v) == nil; got != want {
					t.Errorf("%s: spec schema says %v, Harn's says %v, for %s", tc.def, got, want, data)
				}
				if got := json.Unmarshal(data, tc.goTy()) == nil; got != want {
					t.Errorf("%s: generated decoder says %v, Harn's schema says %v, for %s", tc.def, got, want, data)
				}
			}
		}
	}
	t.Logf("%d documents judged alike by the spec schema, Harn's schema and the generated decoders", total)
}

// The generated structs, reflected back into JSON Schema by invopop/jsonschema,
// must have the spec's members, and the spec's required set.
func TestReflectedTypesMatchSpec(t *testing.T) {
	files, err := func() (map[string]map[string]any, error) {
		out := map[string]map[string]any{}
		for _, f := range []string{"host-shell-discovery.schema.json", "harn-host.schema.json"} {
			data, err := os.ReadFile("../spec/schemas/" + f)
			if err != nil {
				return nil, err
			}
			var s struct {
				Defs map[string]map[string]any `json:"$defs"`
			}
			if err := stdjson.Unmarshal(data, &s); err != nil {
				return nil, err
			}
			for k, v := range s.Defs {
				out[k] = v
			}
		}
		return out, nil
	}()
	if err != nil {
		t.Fatal(err)
	}
	r := &invopop.Reflector{DoNotReference: true, ExpandedStruct: true}
	for def, v := range map[string]any{
		"shell": harn.Shell{}, "list_shells_response": harn.ListShellsResponse{},
		"shell_invocation_request": harn.ShellInvocationRequest{}, "shell_invocation_response": harn.ShellInvocationResponse{},
		"set_default_shell_request": harn.SetDefaultShellRequest{}, "host_call_params": harn.HostCallParams{},
		"host_capabilities_params": harn.HostCapabilitiesParams{}, "capability_object": harn.CapabilityObject{},
	} {
		s := r.Reflect(v)
		var gotProps []string
		for p := s.Properties.Oldest(); p != nil; p = p.Next() {
			gotProps = append(gotProps, p.Key)
		}
		spec := files[def]
		var wantProps []string
		if props, ok := spec["properties"].(map[string]any); ok {
			for k := range props {
				wantProps = append(wantProps, k)
			}
		}
		var wantReq []string
		if req, ok := spec["required"].([]any); ok {
			for _, r := range req {
				wantReq = append(wantReq, fmt.Sprint(r))
			}
		}
		// Required const members are not stored in Go; none exist in these defs.
		slices.Sort(gotProps)
		slices.Sort(wantProps)
		gotReq := slices.Clone(s.Required)
		slices.Sort(gotReq)
		slices.Sort(wantReq)
		if !reflect.DeepEqual(gotProps, wantProps) {
			t.Errorf("%s (%T): reflected members %v, spec %v", def, v, gotProps, wantProps)
		}
		if !reflect.DeepEqual(gotReq, wantReq) && !(len(gotReq) == 0 && len(wantReq) == 0) {
			t.Errorf("%s (%T): reflected required %v, spec %v", def, v, gotReq, wantReq)
		}
	}
}

// missingShared skips a test that needs ../shared when it is absent, except
// in CI (CI set), where the reference material is always laid beside the
// checkout and its absence is a failure.
func missingShared(t *testing.T, err error) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatalf("reference material missing in CI: %v", err)
	}
	t.Skipf("reference material not present: %v", err)
}
