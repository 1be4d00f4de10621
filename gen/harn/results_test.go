package harn_test

import (
	"testing"

	"github.com/go-json-experiment/json"

	"github.com/bridgekit/bridgekit/gen/harn"
)

func TestToolsListResult(t *testing.T) {
	for _, tc := range []struct {
		tools []harn.HostTool
		want  string
	}{
		{nil, `{"tools":[]}`},
		{[]harn.HostTool{{Name: "read"}, {Name: "write"}}, `{"tools":[{"name":"read"},{"name":"write"}]}`},
	} {
		b, err := json.Marshal(harn.ToolsListResult(tc.tools...))
		if err != nil || string(b) != tc.want {
			t.Errorf("ToolsListResult(%v) = %s %v, want %s", tc.tools, b, err, tc.want)
		}
	}
}
