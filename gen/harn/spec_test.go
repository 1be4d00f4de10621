package harn_test

import (
	"bytes"
	stdjson "encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"slices"
	"sort"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/bridgekit/bridgekit/gen/harn"
	"github.com/bridgekit/bridgekit/internal/schematest"
	"github.com/bridgekit/bridgekit/runtime/wire"
)

// The spec's shell-discovery schema is written independently of Harn's. It
// must accept and reject exactly what Harn's accepts and rejects, and so must
// the generated Go decoders. Each base document is mutated systematically
// (members removed, replaced by every JSON kind, extra members added, array
// elements of the wrong kind) and the three verdicts are compared.

const (
	ourSchema      = "../../spec/schemas/host-shell-discovery.schema.json"
	upstreamSchema = "../../../shared/fixtures/harn/upstream/spec/schemas/host-shell-discovery.schema.json"
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
			docs := append([]any{base}, schematest.Mutate(base)...)
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

// Every member the spec names is a typed field of the generated struct, and
// the struct's required set is the spec's. The generated structs carry no
// struct tags (nothing would read them), so this reflects over the decoded
// value instead: a document holding every member the spec names must decode
// with nothing left in Extra and every field set; dropping a member must
// fail with ErrMissingMember naming it exactly when the spec requires it.
func TestTypesMatchSpecMembers(t *testing.T) {
	defs := map[string]map[string]any{}
	for _, f := range []string{"host-shell-discovery.schema.json", "harn-host.schema.json"} {
		data, err := os.ReadFile("../../spec/schemas/" + f)
		if err != nil {
			t.Fatal(err)
		}
		var s struct {
			Defs map[string]map[string]any `json:"$defs"`
		}
		if err := stdjson.Unmarshal(data, &s); err != nil {
			t.Fatal(err)
		}
		for k, v := range s.Defs {
			defs[k] = v
		}
	}
	full := map[string]struct {
		doc  map[string]any
		goTy func() any
	}{
		"shell":                     {shellDoc, func() any { return new(harn.Shell) }},
		"list_shells_response":      {map[string]any{"shells": []any{shellDoc}, "default_shell_id": "zsh"}, func() any { return new(harn.ListShellsResponse) }},
		"shell_invocation_request":  {map[string]any{"shell_id": "zsh", "shell": shellDoc, "command": "ls", "login": true, "interactive": true}, func() any { return new(harn.ShellInvocationRequest) }},
		"shell_invocation_response": {map[string]any{"program": "/bin/zsh", "args": []any{"-c", "ls"}, "command_arg_index": 1, "shell": shellDoc}, func() any { return new(harn.ShellInvocationResponse) }},
		"set_default_shell_request": {map[string]any{"shell_id": "zsh"}, func() any { return new(harn.SetDefaultShellRequest) }},
		"host_call_params":          {map[string]any{"sessionId": "s", "name": "a.b", "args": map[string]any{}, "_meta": map[string]any{}}, func() any { return new(harn.HostCallParams) }},
		"host_capabilities_params":  {map[string]any{"sessionId": "s"}, func() any { return new(harn.HostCapabilitiesParams) }},
		"capability_object":         {map[string]any{"ops": []any{"a"}, "operations": []any{"b"}}, func() any { return new(harn.CapabilityObject) }},
	}
	for def, tc := range full {
		spec := defs[def]
		var props, required []string
		if ps, ok := spec["properties"].(map[string]any); ok {
			for k := range ps {
				props = append(props, k)
			}
		}
		if rs, ok := spec["required"].([]any); ok {
			for _, r := range rs {
				required = append(required, fmt.Sprint(r))
			}
		}
		slices.Sort(props)
		if got := sortedKeys(tc.doc); !reflect.DeepEqual(got, props) {
			t.Fatalf("%s: the test document has %v, the spec names %v", def, got, props)
		}
		data, _ := stdjson.Marshal(tc.doc)
		v := tc.goTy()
		if err := json.Unmarshal(data, v); err != nil {
			t.Fatalf("%s: %v", def, err)
		}
		rv := reflect.ValueOf(v).Elem()
		for i := range rv.NumField() {
			f := rv.Type().Field(i)
			if f.Name == "Extra" {
				if rv.Field(i).Len() != 0 {
					t.Errorf("%s (%T): spec members landed in Extra: %v", def, v, rv.Field(i).Interface())
				}
				continue
			}
			if rv.Field(i).IsZero() && rv.Field(i).Kind() != reflect.Bool {
				t.Errorf("%s (%T): field %s is not filled by any spec member", def, v, f.Name)
			}
		}
		for _, p := range props {
			doc := schematest.Clone(tc.doc).(map[string]any)
			delete(doc, p)
			data, _ := stdjson.Marshal(doc)
			err := json.Unmarshal(data, tc.goTy())
			var de *wire.DecodeError
			isRequired := slices.Contains(required, p)
			gotRequired := errors.Is(err, wire.ErrMissingMember) && errors.As(err, &de) && de.Member == p
			if isRequired != gotRequired || (!isRequired && err != nil) {
				t.Errorf("%s (%T): without %q: %v (spec required: %v)", def, v, p, err, isRequired)
			}
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
