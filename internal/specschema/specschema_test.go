package specschema

import (
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
			if err := sch.Validate(doc(t, bad)); err == nil {
				t.Error("a root-level Harn field is accepted: the forbid overlay is not applied")
			}
			if _, err := s.Compile("acp/v1/schema.json#/$defs/NoSuch"); err == nil {
				t.Error("a missing definition compiles")
			}
		})
	}
}
