package harnvm_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/go-json-experiment/json"

	"github.com/bridgekit/bridgekit/clients/harnvm"
	"github.com/bridgekit/bridgekit/gen/harn"
)

func TestOperationsReadsEveryShape(t *testing.T) {
	var caps harn.HostCapabilities
	in := `{"a":["x","y","x"],"b":{"ops":["p"],"operations":["q","p"]},"c":{"operations":{"z":{},"m":{"note":1}}},"d":{}}`
	if err := json.Unmarshal([]byte(in), &caps); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string][]string{"a": {"x", "y"}, "b": {"p", "q"}, "c": {"m", "z"}, "d": nil, "missing": nil} {
		if got := harnvm.Operations(caps[name]); !slices.Equal(got, want) {
			t.Errorf("%s: got %v, want %v", name, got, want)
		}
	}
}

// Operations reads a host/capabilities entry in any of the shapes Harn accepts.
func ExampleOperations() {
	var caps harn.HostCapabilities
	_ = json.Unmarshal([]byte(`{"process":["list_shells"],"project":{"ops":["mcp_config"]}}`), &caps)
	fmt.Println(harnvm.Operations(caps["process"]), harnvm.Operations(caps["project"]))
	// Output: [list_shells] [mcp_config]
}
