package harn_test

import (
	stdjson "encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"

	"github.com/bridgekit/bridgekit/gen/acp"
	"github.com/bridgekit/bridgekit/gen/externalagent"
	"github.com/bridgekit/bridgekit/gen/harn"
	"github.com/bridgekit/bridgekit/runtime/wire"
)

// Every JSON document of Harn's upstream fixtures and every JSON example of
// the Harn bridge page (the seed) decodes into the typed model and
// re-encodes to the same JSON, compared structurally. The tables below name,
// for each document, the type it decodes as (and which part of it, for
// JSON-RPC messages and fragments), or why it is excluded; a document the
// tables do not list fails the test, so nothing is skipped silently.

const (
	upstreamDir = "../../../shared/fixtures/harn/upstream"
	seedFile    = "../../../shared/seeds/000_8cdcf629c7884897.txt"
)

// model constructs the typed values documents decode into, by name.
var model = map[string]func() any{
	"acp.SessionNotification":        func() any { return new(acp.SessionNotification) },
	"acp.SessionUpdate":              func() any { return new(acp.SessionUpdate) },
	"acp.RequestPermissionRequest":   func() any { return new(acp.RequestPermissionRequest) },
	"acp.RequestPermissionResponse":  func() any { return new(acp.RequestPermissionResponse) },
	"acp.Error":                      func() any { return new(acp.Error) },
	"harn.PromptErrorData":           func() any { return new(harn.PromptErrorData) },
	"harn.ToolCallMeta":              func() any { return new(harn.ToolCallMeta) },
	"harn.ToolExecutor":              func() any { return new(harn.ToolExecutor) },
	"harn.LiveSessionChange":         func() any { return new(harn.LiveSessionChange) },
	"externalagent.Capability":       func() any { return new(externalagent.Capability) },
	"HypothesisAttestation":          func() any { return new(harn.HypothesisAttestation) },
	"AgentIdleParams":                func() any { return new(harn.AgentIdleParams) },
	"AgentResumeParams":              func() any { return new(harn.AgentResumeParams) },
	"SessionRemindParams":            func() any { return new(harn.SessionRemindParams) },
	"SessionAttachParams":            func() any { return new(harn.SessionAttachParams) },
	"HostToolsListResult":            func() any { return new(harn.HostToolsListResult) },
	"ListShellsResponse":             func() any { return new(harn.ListShellsResponse) },
	"ShellInvocationRequest":         func() any { return new(harn.ShellInvocationRequest) },
	"SkillsListResult":               func() any { return new(harn.SkillsListResult) },
	"Skill":                          func() any { return new(harn.Skill) },
	"SkillMatchParams":               func() any { return new(harn.SkillMatchParams) },
	"SkillMatchResult":               func() any { return new(harn.SkillMatchResult) },
	"SessionIDParams":                func() any { return new(harn.SessionIDParams) },
	"SessionRevokeReminderParams":    func() any { return new(harn.SessionRevokeReminderParams) },
	"SetDefaultShellRequest":         func() any { return new(harn.SetDefaultShellRequest) },
	"SkillsFetchParams":              func() any { return new(harn.SkillsFetchParams) },
	"acp.SessionNotification/legacy": nil, // decoded by the legacy reader, see decodePart
}

// part is one typed part of a document: Path is a dotted path of members
// ("params", "error.data", "" for the whole document).
type part struct{ Path, Type string }

// expect is what one document must be.
type expect struct {
	Parts []part
	// Rejected: a decode under Harn's contract must reject the document with this
	// sentinel (the parts are then decoded with the legacy reader).
	Rejected error
	// Excluded says why the document is no message or payload to decode.
	Excluded string
	// Untyped lists the members the document holds that no type names
	// (kept in an Extra), as "Type.member"; any other is an error, so that
	// a document decoded as the wrong open type is noticed.
	Untyped []string
}

// upstreamTable lists every file under upstreamDir: its documents (the
// "documents" of a conformance fixture, the elements of an array), in order.
var upstreamTable = map[string][]expect{
	"conformance/protocols/fixtures/acp/jsonrpc_error.valid.json": {
		{Parts: []part{{"error", "acp.Error"}}},
		{Parts: []part{{"error", "acp.Error"}, {"error.data", "harn.PromptErrorData"}}},
	},
	"conformance/protocols/fixtures/acp/session_request_permission.valid.json": {
		// Harn sends its permission toolCall with the sessionUpdate tag of a
		// session/update, which ACP's ToolCallUpdate does not name: kept.
		{Parts: []part{{"params", "acp.RequestPermissionRequest"}}, Untyped: []string{"ToolCallUpdate.sessionUpdate"}},
		{Parts: []part{{"result", "acp.RequestPermissionResponse"}}},
	},
	"conformance/protocols/fixtures/acp/session_update_tool_call_harn_meta.valid.json": {
		{Parts: []part{{"params", "acp.SessionNotification"}}},
		{Parts: []part{{"params", "acp.SessionNotification"}}},
	},
	"conformance/protocols/fixtures/acp/session_update_tool_call_legacy_top_level_harn_fields.invalid.json": {
		{Parts: []part{{"params", "acp.SessionNotification/legacy"}}, Rejected: wire.ErrForbiddenMember},
	},
	"crates/harn-serve/tests/fixtures/acp/session_update_extensions.json": slices.Repeat([]expect{{Parts: []part{{"params", "acp.SessionNotification"}}}}, 11),
	"spec/protocol-artifacts/manifest.json":                               {{Excluded: "Harn's protocol-artifact manifest: vocabulary lists and binding metadata, not a message; its session-update, agent-event and tool-lifecycle lists are checked against the catalogue in TestManifestVocabulariesAreTyped"}},
	"spec/schemas/host-shell-discovery.schema.json":                       {{Excluded: "a JSON Schema, not a message; spec_test.go judges documents with it, our schema and the decoders alike"}},
}

// seedTable lists the seed's JSON examples in order: first the fenced ```json
// blocks, then the inline `{...}` and `[...]` snippets that are JSON. Each
// entry names a fragment of the example that must occur in it, so that the
// table cannot drift from the page.
var seedTable = []struct {
	Has string
	expect
}{
	{`"hypothesis_native_attestation"`, expect{Parts: []part{{"", "HypothesisAttestation"}}}},
	{`"reminder_emitted"`, expect{Parts: []part{{"", "acp.SessionUpdate"}}}},
	{`"visible_delta"`, expect{Parts: []part{{"", "acp.SessionUpdate"}}}},
	{`"approval_policy"`, expect{Parts: []part{{"_meta", "harn.ToolCallMeta"}}}},
	{`"approvalRequest"`, expect{Parts: []part{{"", "acp.RequestPermissionRequest"}}, Untyped: []string{"ToolCallUpdate.sessionUpdate"}}},
	{`"optionId": "allow"`, expect{Parts: []part{{"", "acp.RequestPermissionResponse"}}}},
	// The page abbreviates the audit record to {"...": "MutationSessionRecord"}.
	{`"worker_update"`, expect{Parts: []part{{"params", "acp.SessionNotification"}}, Untyped: []string{"MutationSessionRecord...."}}},
	{`"harn.external_agent.v1"`, expect{Parts: []part{{"", "externalagent.Capability"}}}},
	{`"backoff_ms"`, expect{Parts: []part{{"", "AgentIdleParams"}}}},
	{`{}`, expect{Parts: []part{{"", "AgentResumeParams"}}}},
	{`"dedupe_key"`, expect{Parts: []part{{"", "SessionRemindParams"}}}},
	{`"takeover": false`, expect{Parts: []part{{"", "SessionAttachParams"}}}},
	{`"previous_controller_id"`, expect{Parts: []part{{"", "harn.LiveSessionChange"}}}},
	{`"deprecated": true`, expect{Parts: []part{{"", "HostToolsListResult"}}}},
	{`"default_shell_id"`, expect{Parts: []part{{"", "ListShellsResponse"}}}},
	{`"command": "printf ok"`, expect{Parts: []part{{"", "ShellInvocationRequest"}}}},
	{`"command_arg_index"`, expect{Excluded: "the page abbreviates the shell of the process.shell_invocation response to {\"id\":\"zsh\"}; the schema (ours and Harn's) requires the whole Shell, so this abbreviation is no valid response (catalogue 1.16); seed_examples.json holds the full form"}},
	{`"acme/ops/review"`, expect{Parts: []part{{"", "SkillsListResult"}}}},
	{`"# Deploy runbook`, expect{Parts: []part{{"", "Skill"}}}},
	{`"working_files"`, expect{Parts: []part{{"", "SkillMatchParams"}}}},
	{`"matched by embedding similarity"`, expect{Parts: []part{{"", "SkillMatchResult"}}}},
	// Inline snippets.
	{`"mcp_server"`, expect{Parts: []part{{"", "harn.ToolExecutor"}}}},
	{`"cancelled"`, expect{Parts: []part{{"", "acp.RequestPermissionResponse"}}}},
	{`{ "sessionId": "..." }`, expect{Parts: []part{{"", "SessionIDParams"}}}},
	{`"reminderId"`, expect{Parts: []part{{"", "SessionRevokeReminderParams"}}}},
	{`["/C"]`, expect{Excluded: "cmd's argument vector, quoted in prose; it is the default_args member of a Shell, decoded with the shells above"}},
	{`"-NoProfile"`, expect{Excluded: "PowerShell's argument vector, quoted in prose; it is the default_args member of a Shell"}},
	{`"shell_id": "zsh"`, expect{Parts: []part{{"", "SetDefaultShellRequest"}}}},
	{`"id": ""`, expect{Parts: []part{{"", "SkillsFetchParams"}}}},
}

func readShared(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		missingShared(t, err)
	}
	return data
}

// at returns the raw value at a dotted member path of doc.
func at(t *testing.T, doc []byte, path string) []byte {
	t.Helper()
	if path == "" {
		return doc
	}
	for _, name := range strings.Split(path, ".") {
		var m map[string]stdjson.RawMessage
		if err := stdjson.Unmarshal(doc, &m); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		v, ok := m[name]
		if !ok {
			t.Fatalf("no member %s in %s", path, doc)
		}
		doc = v
	}
	return doc
}

// checkParts decodes each part of doc into its type and compares the
// re-encoding with the part.
func checkParts(t *testing.T, where string, doc []byte, e expect) {
	t.Helper()
	if e.Rejected != nil {
		for _, p := range e.Parts {
			if err := json.Unmarshal(at(t, doc, p.Path), new(acp.SessionNotification), harn.ContractHarn.Options()); !errors.Is(err, e.Rejected) {
				t.Errorf("%s: a decode under Harn's contract must reject %s with %v, got %v", where, p.Path, e.Rejected, err)
			}
		}
	}
	for _, p := range e.Parts {
		raw := at(t, doc, p.Path)
		var v any
		if p.Type == "acp.SessionNotification/legacy" {
			n, err := harn.ReadLegacySessionUpdate(raw)
			if err != nil {
				t.Errorf("%s: the legacy reader rejects %s: %v", where, p.Path, err)
				continue
			}
			v = n
		} else {
			v = model[p.Type]()
			if err := json.Unmarshal(raw, v); err != nil {
				t.Errorf("%s: %s does not decode as %s: %v", where, p.Path, p.Type, err)
				continue
			}
		}
		out, err := json.Marshal(v, wire.Fidelity)
		if err != nil {
			t.Errorf("%s: %s: encode %s: %v", where, p.Path, p.Type, err)
			continue
		}
		if p.Type == "acp.SessionNotification/legacy" {
			// The legacy shape comes back in the current one: the same
			// members, the vendor fields moved under _meta.harn.
			if !sameJSON(t, out, legacyUpgraded(t, raw)) {
				t.Errorf("%s: legacy re-encoding %s", where, out)
			}
			continue
		}
		if !sameJSON(t, raw, out) {
			t.Errorf("%s: %s as %s re-encodes differently\n in: %s\nout: %s", where, p.Path, p.Type, raw, out)
		}
		// gen/acp keeps Harn's parts as sent; Harn's view types them.
		view, err := harnView(reflect.ValueOf(v))
		if err != nil {
			t.Errorf("%s: %s as %s: Harn's parts do not decode: %v", where, p.Path, p.Type, err)
			continue
		}
		for _, h := range view {
			if u, ok := h.(harn.SessionUpdate); ok && u.Unknown != nil {
				t.Errorf("%s: session/update %q is not a typed variant of ACP's or Harn's", where, u.Tag())
			}
		}
		var got []string
		for _, x := range append([]any{v}, view...) {
			got = append(got, untyped(reflect.ValueOf(x), 0)...)
		}
		slices.Sort(got)
		if !slices.Equal(got, e.Untyped) {
			t.Errorf("%s: %s as %s leaves members untyped: %v (the table expects %v)", where, p.Path, p.Type, got, e.Untyped)
		}
	}
}

// untyped lists, sorted, the members a decoded value keeps in an Extra, as
// "Type.member".
func untyped(v reflect.Value, depth int) []string {
	var out []string
	var walk func(v reflect.Value, depth int)
	walk = func(v reflect.Value, depth int) {
		if depth > 32 {
			return
		}
		switch v.Kind() {
		case reflect.Pointer, reflect.Interface:
			if !v.IsNil() {
				walk(v.Elem(), depth+1)
			}
		case reflect.Struct:
			if get := v.MethodByName("Get"); get.IsValid() && get.Type().NumIn() == 0 && get.Type().NumOut() == 2 {
				if r := get.Call(nil); r[1].Bool() {
					walk(r[0], depth+1)
				}
				return
			}
			for i := range v.NumField() {
				f := v.Type().Field(i)
				if !f.IsExported() {
					continue
				}
				if x, ok := v.Field(i).Interface().(wire.Extras); ok {
					for _, m := range x {
						out = append(out, v.Type().Name()+"."+m.Name)
					}
					continue
				}
				walk(v.Field(i), depth+1)
			}
		case reflect.Slice:
			if v.Type().Elem().Kind() == reflect.Uint8 {
				return
			}
			for i := range v.Len() {
				walk(v.Index(i), depth+1)
			}
		case reflect.Map:
			for _, k := range v.MapKeys() {
				walk(v.MapIndex(k), depth+1)
			}
		}
	}
	walk(v, depth)
	slices.Sort(out)
	return out
}

// harnView types, with gen/harn's accessors, the parts of a decoded value
// that gen/acp keeps as sent: an update whose tag ACP does not know
// (UpdateOf) and the _meta of ACP's types that Harn extends. It returns
// them, and the parts of those, in the order found.
func harnView(v reflect.Value) ([]any, error) {
	var out []any
	var errs []error
	add := func(x any, err error) {
		if err != nil {
			errs = append(errs, err)
			return
		}
		if rv := reflect.ValueOf(x); x != nil && !(rv.Kind() == reflect.Pointer && rv.IsNil()) {
			out = append(out, x)
		}
	}
	var walk func(v reflect.Value, depth int)
	walk = func(v reflect.Value, depth int) {
		if depth > 32 || !v.IsValid() {
			return
		}
		switch v.Kind() {
		case reflect.Pointer, reflect.Interface:
			if !v.IsNil() {
				walk(v.Elem(), depth+1)
			}
			return
		case reflect.Slice:
			for i := range v.Len() {
				walk(v.Index(i), depth+1)
			}
			return
		case reflect.Map:
			for _, k := range v.MapKeys() {
				walk(v.MapIndex(k), depth+1)
			}
			return
		case reflect.Struct:
		default:
			return
		}
		if get := v.MethodByName("Get"); get.IsValid() && get.Type().NumIn() == 0 && get.Type().NumOut() == 2 {
			if r := get.Call(nil); r[1].Bool() {
				walk(r[0], depth+1)
			}
			return
		}
		n := len(out)
		if v.CanAddr() {
			switch x := v.Addr().Interface().(type) {
			case *acp.SessionUpdate:
				if x.Unknown != nil {
					u, err := harn.UpdateOf(*x)
					add(u, err)
				}
			case *acp.ToolCall:
				add(harn.ToolLifecycleOf(x.Meta))
			case *acp.ToolCallUpdate:
				add(harn.ToolLifecycleOf(x.Meta))
			case *acp.TextContent:
				add(harn.ContentFieldsOf(x.Meta))
			case *acp.Diff:
				add(harn.ContentFieldsOf(x.Meta))
			case *acp.RequestPermissionResponse:
				add(harn.PermissionResponseOf(x.Meta))
			case *acp.PromptResponse:
				add(harn.PromptResultOf(x.Meta))
			case *acp.AgentCapabilities:
				add(harn.AgentCapabilitiesOf(x.Meta))
			}
		}
		added := slices.Clone(out[n:])
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				walk(v.Field(i), depth+1)
			}
		}
		for _, x := range added {
			w := reflect.New(reflect.TypeOf(x))
			w.Elem().Set(reflect.ValueOf(x))
			walk(w.Elem(), depth+1)
		}
	}
	if v.Kind() == reflect.Pointer && !v.IsNil() {
		v = v.Elem()
	} else {
		w := reflect.New(v.Type())
		w.Elem().Set(v)
		v = w.Elem()
	}
	walk(v, 0)
	return out, errors.Join(errs...)
}

// legacyUpgraded moves, by hand, Harn's tool-lifecycle fields of the legacy
// fixture's update under _meta.harn: what the legacy reader must produce.
func legacyUpgraded(t *testing.T, params []byte) []byte {
	t.Helper()
	var p map[string]any
	if err := stdjson.Unmarshal(params, &p); err != nil {
		t.Fatal(err)
	}
	u := p["update"].(map[string]any)
	harnMeta := map[string]any{}
	for _, f := range []string{"audit", "changedPaths", "data", "durationMs", "error", "errorCategory", "executionDurationMs", "executor", "mutationStatus", "parsing", "rawInputPartial"} {
		if v, ok := u[f]; ok {
			harnMeta[f] = v
			delete(u, f)
		}
	}
	u["_meta"] = map[string]any{"harn": harnMeta}
	out, _ := stdjson.Marshal(p)
	return out
}

func TestUpstreamFixturesRoundTrip(t *testing.T) {
	seen := map[string]bool{}
	err := filepath.WalkDir(upstreamDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || !strings.HasSuffix(path, ".json") {
			return nil
		}
		rel, _ := filepath.Rel(upstreamDir, path)
		rel = filepath.ToSlash(rel)
		seen[rel] = true
		exp, ok := upstreamTable[rel]
		if !ok {
			t.Errorf("%s is not listed in upstreamTable", rel)
			return nil
		}
		data := readShared(t, path)
		if len(exp) == 1 && exp[0].Excluded != "" {
			return nil
		}
		var docs []stdjson.RawMessage
		var wrapper struct{ Documents []stdjson.RawMessage }
		if strings.HasPrefix(strings.TrimSpace(string(data)), "[") {
			if err := stdjson.Unmarshal(data, &docs); err != nil {
				t.Fatal(err)
			}
		} else if err := stdjson.Unmarshal(data, &wrapper); err != nil || wrapper.Documents == nil {
			t.Fatalf("%s: neither an array nor a fixture with documents", rel)
		} else {
			docs = wrapper.Documents
		}
		if len(docs) != len(exp) {
			t.Fatalf("%s: %d documents, the table lists %d", rel, len(docs), len(exp))
		}
		for i, doc := range docs {
			checkParts(t, rel+"#"+string(rune('0'+i)), doc, exp[i])
		}
		return nil
	})
	if err != nil {
		missingShared(t, err)
	}
	for rel := range upstreamTable {
		if !seen[rel] {
			t.Errorf("%s is listed but missing under %s", rel, upstreamDir)
		}
	}
}

// seedExamples extracts the seed's JSON examples: fenced ```json blocks,
// then inline `...` snippets that parse as a JSON object or array.
func seedExamples(t *testing.T) []string {
	t.Helper()
	page := string(readShared(t, seedFile))
	fenced := regexp.MustCompile("(?s)```json\\s*(.*?)```")
	var out []string
	for _, m := range fenced.FindAllStringSubmatch(page, -1) {
		out = append(out, strings.TrimSpace(m[1]))
	}
	rest := fenced.ReplaceAllString(page, "")
	for _, m := range regexp.MustCompile("`([^`]+)`").FindAllStringSubmatch(rest, -1) {
		s := strings.TrimSpace(m[1])
		if (strings.HasPrefix(s, "{") || strings.HasPrefix(s, "[")) && stdjson.Valid([]byte(s)) {
			out = append(out, s)
		}
	}
	return out
}

func TestSeedExamplesDecode(t *testing.T) {
	examples := seedExamples(t)
	if len(examples) != len(seedTable) {
		t.Fatalf("the seed has %d JSON examples, the table lists %d", len(examples), len(seedTable))
	}
	excluded := 0
	for i, ex := range examples {
		e := seedTable[i]
		if !strings.Contains(ex, e.Has) {
			t.Errorf("example %d does not contain %s: %.80s", i, e.Has, ex)
			continue
		}
		if e.Excluded != "" {
			excluded++
			continue
		}
		checkParts(t, "seed example "+e.Has, []byte(ex), e.expect)
	}
	t.Logf("%d seed examples decoded and re-encoded, %d excluded with a reason", len(examples)-excluded, excluded)
}

func TestLegacyFixtureRejectedByDefaultAcceptedByLegacyReader(t *testing.T) {
	data := readShared(t, upstreamDir+"/conformance/protocols/fixtures/acp/session_update_tool_call_legacy_top_level_harn_fields.invalid.json")
	var f struct {
		Documents []struct{ Params stdjson.RawMessage }
	}
	if err := stdjson.Unmarshal(data, &f); err != nil || len(f.Documents) != 1 {
		t.Fatalf("fixture: %v", err)
	}
	params := f.Documents[0].Params
	var n acp.SessionNotification
	err := json.Unmarshal(params, &n, harn.ContractHarn.Options())
	var de *wire.DecodeError
	if !errors.Is(err, wire.ErrForbiddenMember) || !errors.As(err, &de) || de.Type != "ToolCallUpdate" {
		t.Fatalf("Harn's contract must reject root-level Harn fields of a tool_call_update: %v", err)
	}
	// Without it (a plain ACP agent's update) they are extra members, kept.
	if err := json.Unmarshal(params, &n); err != nil || n.Update.ToolCallUpdate == nil {
		t.Fatalf("a plain decode keeps them: %v", err)
	} else if _, ok := n.Update.ToolCallUpdate.Extra.Get("durationMs"); !ok {
		t.Fatalf("durationMs not in Extra: %+v", n.Update.ToolCallUpdate.Extra)
	}
	l, err := harn.ReadLegacySessionUpdate(params)
	if err != nil {
		t.Fatal(err)
	}
	u := l.Update.ToolCallUpdate
	if u == nil {
		t.Fatalf("not a tool_call_update: %+v", l.Update)
	}
	h, err := harn.ToolLifecycleOf(u.Meta)
	if err != nil || h == nil || *h.DurationMS != 8 || *h.ExecutionDurationMS != 6 || h.Executor.String == nil || *h.Executor.String != harn.ToolExecutorNameHarnBuiltin {
		t.Fatalf("the legacy fields must land under _meta.harn: %+v %v", h, err)
	}
	if title, _ := u.Title.Get(); string(u.RawOutput) != `{"ok":true}` || title != "read_file" {
		t.Fatalf("ACP's own fields stay: %+v", u)
	}
}
