package schematest

import (
	stdjson "encoding/json"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/bridgekit/bridgekit/runtime/wire"
)

func TestMutations(t *testing.T) {
	ms := Mutations(map[string]any{"a": []any{1.0}})
	seen := map[string]bool{}
	for _, m := range ms {
		data, _ := stdjson.Marshal(m)
		seen[string(data)] = true
	}
	for _, want := range []string{`{}`, `{"a":null}`, `{"a":"x"}`, `{"a":[1],"extra_member":1}`, `{"a":[1,"s"]}`, `{"a":[1,null]}`, `{"a":["x"]}`} {
		if !seen[want] {
			t.Errorf("no mutation %s among %v", want, seen)
		}
	}
	if len(Mutations("leaf")) != 0 {
		t.Fatal("a scalar has no mutations of its own")
	}
}

func TestTypePointers(t *testing.T) {
	ps, err := TypePointers("../../gen/agentpmmachine/types_gen.go")
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{
		"HarnessEvent":         "agentpm/machine.schema.json#/$defs/harness_event",
		"EventPayloadTerminal": "agentpm/machine.schema.json#/$defs/event_payload/oneOf/8",
	} {
		if ps[name] != want {
			t.Errorf("%s: %q, want %q", name, ps[name], want)
		}
	}
}

func TestHasUnknown(t *testing.T) {
	type union struct {
		A       *int
		Unknown jsontext.Value
	}
	type outer struct {
		List []union
		Map  map[string]*union
		Opt  wire.Nullable[union]
		Raw  jsontext.Value
	}
	for _, tc := range []struct {
		v    any
		want bool
	}{
		{&outer{}, false},
		{&outer{Raw: jsontext.Value(`{"Unknown":1}`)}, false},
		{&outer{List: []union{{}, {Unknown: jsontext.Value(`{}`)}}}, true},
		{&outer{Map: map[string]*union{"k": {Unknown: jsontext.Value(`{}`)}}}, true},
		{&outer{Opt: wire.Some(union{Unknown: jsontext.Value(`{}`)})}, true},
		{&outer{Opt: wire.Some(union{})}, false},
	} {
		if got := HasUnknown(tc.v); got != tc.want {
			t.Errorf("%+v: %v", tc.v, got)
		}
	}
}
