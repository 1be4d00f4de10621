package specschema

import (
	"errors"
	"io/fs"
	"os"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/bridgekit/bridgekit/spec"
)

func doc(t *testing.T, s string) any {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(s))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// The embedded spec and the checkout's judge alike, with the catalogues'
// overlays applied: a tool call update with Harn's fields at its root (which
// an overlay forbids) is refused, the same under _meta.harn accepted.
func TestEmbeddedSpecHasOverlays(t *testing.T) {
	good := `{"sessionId":"s","update":{"sessionUpdate":"tool_call_update","toolCallId":"t","_meta":{"harn":{"durationMs":8}}}}`
	bad := `{"sessionId":"s","update":{"sessionUpdate":"tool_call_update","toolCallId":"t","durationMs":8}}`
	for name, fsys := range map[string]fs.FS{"embedded": spec.FS, "checkout": os.DirFS("../../spec")} {
		t.Run(name, func(t *testing.T) {
			s, err := Load(fsys)
			if err != nil {
				t.Fatal(err)
			}
			const loc = "acp/v1/schema.json#/$defs/SessionNotification"
			sch, err := s.Compile(loc)
			if err != nil {
				t.Fatal(err)
			}
			if again, _ := s.Compile(loc); again != sch {
				t.Error("a location is compiled again")
			}
			if err := sch.Validate(doc(t, good)); err != nil {
				t.Errorf("_meta.harn refused: %v", err)
			}
			// Harn's forbidden root members are extra members of a plain ACP
			// peer, and refused only under Harn's contract.
			if err := sch.Validate(doc(t, bad)); err != nil {
				t.Errorf("a plain ACP peer's extra member refused: %v", err)
			}
			harn, err := LoadUnder(fsys, "harn")
			if err != nil {
				t.Fatal(err)
			}
			hs, err := harn.Compile(loc)
			if err != nil {
				t.Fatal(err)
			}
			if err := hs.Validate(doc(t, bad)); err == nil {
				t.Error("a root-level Harn field is accepted under Harn's contract: the forbid overlay is not applied")
			}
			if _, err := s.Compile("acp/v1/schema.json#/$defs/NoSuch"); err == nil {
				t.Error("a missing definition compiles")
			}
		})
	}
}

// Guarding a tagged union changes nothing it accepts: a variant is judged
// by its own schema, a tag no variant has is refused, and a wrong member of
// the chosen variant is found at its own location.
func TestGuardedUnionJudgesAlike(t *testing.T) {
	s, err := Load(spec.FS)
	if err != nil {
		t.Fatal(err)
	}
	sch, err := s.Compile("acp/v1/schema.json#/$defs/SessionUpdate")
	if err != nil {
		t.Fatal(err)
	}
	for in, ok := range map[string]bool{
		`{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"}}`: true,
		`{"sessionUpdate":"plan","entries":[]}`:                                         true,
		`{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":7}}`:    false,
		`{"sessionUpdate":"no_such_update"}`:                                            false,
		`{"sessionUpdate":"plan"}`:                                                      false,
		`{"content":{"type":"text","text":"hi"}}`:                                       false,
	} {
		err := sch.Validate(doc(t, in))
		if (err == nil) != ok {
			t.Errorf("%s: valid %v, want %v (%v)", in, err == nil, ok, err)
		}
	}
	err = sch.Validate(doc(t, `{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":7}}`))
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) || !reaches(ve, "/content/text") {
		t.Errorf("the wrong member is not among the causes: %v", err)
	}
}

func reaches(e *jsonschema.ValidationError, ptr string) bool {
	if "/"+strings.Join(e.InstanceLocation, "/") == ptr {
		return true
	}
	for _, c := range e.Causes {
		if reaches(c, ptr) {
			return true
		}
	}
	return false
}
