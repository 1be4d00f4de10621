package acp_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/bridgekit/bridgekit/gen/acp"
	"github.com/bridgekit/bridgekit/gen/harn"
	"github.com/bridgekit/bridgekit/runtime/rpc"
	"github.com/bridgekit/bridgekit/runtime/wire"
)

// A -32602 answer names the place once, as a JSON pointer in wire names,
// and says why without Go type names; the error still unwraps to the
// decode error.
func TestInvalidParamsText(t *testing.T) {
	for _, tc := range []struct {
		name, params string
		v            any
		want         string
		cause        error
	}{
		{"wrong kind in a union in an array", `{"sessionId":"s","prompt":[{"type":"text","text":5}]}`, new(acp.PromptRequest),
			"invalid params: /prompt/0/text: want string, got number: wrong JSON kind", wire.ErrWrongKind},
		{"wrong kind of a named scalar", `{"sessionId":3,"prompt":[]}`, new(acp.PromptRequest),
			"invalid params: /sessionId: want string, got number: wrong JSON kind", wire.ErrWrongKind},
		{"missing member", `{"operation":"x","params":{}}`, new(harn.HostCallParams),
			"invalid params: /name: missing required member", wire.ErrMissingMember},
		{"missing nested member", `{"sessionId":"s","prompt":[{"type":"text"}]}`, new(acp.PromptRequest),
			"invalid params: /prompt/0/text: missing required member", wire.ErrMissingMember},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := rpc.DecodeParams([]byte(tc.params), tc.v)
			var e *rpc.Error
			if !errors.As(err, &e) || e.Code != rpc.CodeInvalidParams {
				t.Fatalf("DecodeParams = %v, want a -32602 error", err)
			}
			if e.Message != tc.want {
				t.Errorf("message %q\nwant    %q", e.Message, tc.want)
			}
			for _, bad := range []string{"Go ", "acp.", "harn.", "decode "} {
				if strings.Contains(e.Message, bad) {
					t.Errorf("message %q names Go types (%q)", e.Message, bad)
				}
			}
			if !errors.Is(err, tc.cause) {
				t.Errorf("error does not unwrap to %v", tc.cause)
			}
		})
	}
}
