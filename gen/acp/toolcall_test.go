package acp_test

// ToolCall and ToolCallUpdate hold every member they share in one Go type
// (spec/overrides.json's represent entry), without losing what each
// schema says of null: ToolCallUpdate's members keep absent, null and a
// value apart; ToolCall's refuse null.

import (
	stdjson "encoding/json"
	"errors"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"

	"github.com/bridgekit/bridgekit/gen/acp"
	"github.com/bridgekit/bridgekit/gen/acpunstable"
	"github.com/bridgekit/bridgekit/runtime/wire"
)

// kindOf takes the kind of a ToolCall and of a ToolCallUpdate alike: it
// compiles only while both are one type, as do the assignments in
// mergeToolCall.
func kindOf(k wire.Nullable[acp.ToolKind]) string {
	if v, ok := k.Get(); ok {
		return string(v)
	}
	return "-"
}

// mergeToolCall applies an update as a client does: a member the update
// carries replaces the call's; null, like absent, leaves it (ACP: "only
// changed fields need to be included").
func mergeToolCall(c *acp.ToolCall, u *acp.ToolCallUpdate) {
	if _, ok := u.Kind.Get(); ok {
		c.Kind = u.Kind
	}
	if _, ok := u.Status.Get(); ok {
		c.Status = u.Status
	}
	if _, ok := u.Content.Get(); ok {
		c.Content = u.Content
	}
	if _, ok := u.Locations.Get(); ok {
		c.Locations = u.Locations
	}
}

func TestToolCallAndUpdateShareMemberTypes(t *testing.T) {
	var c acp.ToolCall
	if err := json.Unmarshal([]byte(`{"toolCallId":"c","title":"t","kind":"read","status":"pending"}`), &c); err != nil {
		t.Fatal(err)
	}
	var u acp.ToolCallUpdate
	if err := json.Unmarshal([]byte(`{"toolCallId":"c","kind":null,"status":"completed","locations":[{"path":"/a"}]}`), &u); err != nil {
		t.Fatal(err)
	}
	if kindOf(c.Kind) != "read" || kindOf(u.Kind) != "-" {
		t.Fatalf("kinds %s %s", kindOf(c.Kind), kindOf(u.Kind))
	}
	mergeToolCall(&c, &u)
	out, err := json.Marshal(c)
	if want := `{"toolCallId":"c","title":"t","kind":"read","status":"completed","locations":[{"path":"/a"}]}`; err != nil || string(out) != want {
		t.Fatalf("merged: %s (%v), want %s", out, err, want)
	}

	// Every member both schemas name and ToolCall does not require has one
	// Go type in both structs (a required one, title, cannot be absent in
	// ToolCall, so it stays a plain string there), in the stable package
	// and in the unstable one, which the same generator path emits (its
	// round trips are the ones tested below).
	for _, pkg := range []struct {
		schema    string
		call, upd reflect.Type
	}{
		{"../../spec/schemas/acp/v1/schema.json", reflect.TypeFor[acp.ToolCall](), reflect.TypeFor[acp.ToolCallUpdate]()},
		{"../../spec/schemas/acp/v1/schema.unstable.json", reflect.TypeFor[acpunstable.ToolCall](), reflect.TypeFor[acpunstable.ToolCallUpdate]()},
	} {
		sharedMemberTypes(t, pkg.schema, pkg.call, pkg.upd)
	}
}

// sharedMemberTypes checks that callT and updT, generated from schema's
// ToolCall and ToolCallUpdate, give each optional member they share one
// Go type.
func sharedMemberTypes(t *testing.T, schema string, callT, updT reflect.Type) {
	t.Helper()
	data, err := os.ReadFile(schema)
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Defs map[string]struct {
			Properties map[string]any `json:"properties"`
			Required   []string       `json:"required"`
		} `json:"$defs"`
	}
	if err := stdjson.Unmarshal(data, &s); err != nil {
		t.Fatal(err)
	}
	call, upd := s.Defs["ToolCall"], s.Defs["ToolCallUpdate"]
	field := func(typ reflect.Type, member string) reflect.StructField {
		for i := range typ.NumField() {
			if f := typ.Field(i); strings.EqualFold(f.Name, strings.TrimPrefix(member, "_")) {
				return f
			}
		}
		t.Fatalf("%s has no field for member %q", typ, member)
		return reflect.StructField{}
	}
	var shared []string
	for m := range call.Properties {
		if _, both := upd.Properties[m]; !both || slices.Contains(call.Required, m) {
			continue
		}
		shared = append(shared, m)
		if a, b := field(callT, m), field(updT, m); a.Type != b.Type {
			t.Errorf("%s: member %q: %v.%s is %v, %v.%s is %v", schema, m, callT, a.Name, a.Type, updT, b.Name, b.Type)
		}
	}
	for _, m := range []string{"kind", "status", "content", "locations"} {
		if !slices.Contains(shared, m) {
			t.Errorf("%s: member %q was not compared (compared %v)", schema, m, shared)
		}
	}
}

// toolCallMembers are a value of each member the two types share.
var toolCallMembers = map[string]string{
	"kind":      `"read"`,
	"status":    `"in_progress"`,
	"content":   `[{"type":"content","content":{"type":"text","text":"x"}}]`,
	"locations": `[{"path":"/a","line":3}]`,
}

// state reports a shared member's wire state: absent, null or value.
func state(t *testing.T, v any, member string) string {
	t.Helper()
	f := reflect.ValueOf(v).Elem().FieldByNameFunc(func(n string) bool { return strings.EqualFold(n, member) })
	absent := f.MethodByName("IsAbsent").Call(nil)[0].Bool()
	null := f.MethodByName("IsNull").Call(nil)[0].Bool()
	switch {
	case absent:
		return "absent"
	case null:
		return "null"
	}
	return "value"
}

func TestToolCallUpdateMembersRoundTripAbsentNullValue(t *testing.T) {
	for m, value := range toolCallMembers {
		cases := map[string]string{
			`{"toolCallId":"c"}`:                           "absent",
			`{"toolCallId":"c","` + m + `":null}`:          "null",
			`{"toolCallId":"c","` + m + `":` + value + `}`: "value",
		}
		if value[0] == '[' {
			cases[`{"toolCallId":"c","`+m+`":[]}`] = "value"
		}
		for in, want := range cases {
			var u acp.ToolCallUpdate
			if err := json.Unmarshal([]byte(in), &u); err != nil {
				t.Fatalf("%s: %v", in, err)
			}
			if got := state(t, &u, m); got != want {
				t.Errorf("%s: %s is %s, want %s", in, m, got, want)
			}
			if out, err := json.Marshal(u); err != nil || string(out) != in {
				t.Errorf("%s re-encoded as %s (%v)", in, out, err)
			}
			if out, err := stdjson.Marshal(u); err != nil || string(out) != in {
				t.Errorf("%s re-encoded by encoding/json as %s (%v)", in, out, err)
			}
		}
	}
}

func TestToolCallMembersRoundTripAbsentValueAndRefuseNull(t *testing.T) {
	nulls := map[string]acp.ToolCall{
		"kind":      {ToolCallID: "c", Title: "t", Kind: wire.Null[acp.ToolKind]()},
		"status":    {ToolCallID: "c", Title: "t", Status: wire.Null[acp.ToolCallStatus]()},
		"content":   {ToolCallID: "c", Title: "t", Content: wire.Null[[]acp.ToolCallContent]()},
		"locations": {ToolCallID: "c", Title: "t", Locations: wire.Null[[]acp.ToolCallLocation]()},
	}
	for m, value := range toolCallMembers {
		cases := map[string]string{
			`{"toolCallId":"c","title":"t"}`:                           "absent",
			`{"toolCallId":"c","title":"t","` + m + `":` + value + `}`: "value",
		}
		if value[0] == '[' {
			cases[`{"toolCallId":"c","title":"t","`+m+`":[]}`] = "value"
		}
		for in, want := range cases {
			var c acp.ToolCall
			if err := json.Unmarshal([]byte(in), &c); err != nil {
				t.Fatalf("%s: %v", in, err)
			}
			if got := state(t, &c, m); got != want {
				t.Errorf("%s: %s is %s, want %s", in, m, got, want)
			}
			if out, err := json.Marshal(c); err != nil || string(out) != in {
				t.Errorf("%s re-encoded as %s (%v)", in, out, err)
			}
		}
		// null: refused where the schema does not admit it, at its
		// pointer, which a session/update's -32602 answer names.
		in := `{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"c","title":"t","` + m + `":null}}`
		var n acp.SessionNotification
		err := json.Unmarshal([]byte(in), &n)
		var de *wire.DecodeError
		if !errors.Is(err, wire.ErrNullValue) || !errors.As(err, &de) || de.Type != "ToolCall" || de.Member != m || wire.Pointer(err) != "/update/"+m {
			t.Errorf("%s: got %v (pointer %q), want null refused at /update/%s", in, err, wire.Pointer(err), m)
		}
		// and never written: a null set by hand fails the encode.
		c, ok := nulls[m]
		if !ok {
			t.Fatalf("no null ToolCall for %s", m)
		}
		out, err := json.Marshal(c)
		var ee *wire.EncodeError
		if !errors.Is(err, wire.ErrNullValue) || !errors.As(err, &ee) || ee.Type != "ToolCall."+m {
			t.Errorf("ToolCall with a null %s encoded as %s (%v), want ErrNullValue", m, out, err)
		}
	}
}
