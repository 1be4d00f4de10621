package rpc_test

import (
	"testing"

	"github.com/bridgekit/bridgekit/runtime/rpc"
)

// TestEnumNames checks the names of Kind, FrameErrorKind and Direction,
// and the fallback for a value outside each set.
func TestEnumNames(t *testing.T) {
	for _, tt := range []struct {
		got  interface{ String() string }
		want string
	}{
		{rpc.KindRequest, "request"},
		{rpc.KindError, "error"},
		{rpc.Kind(0), "Kind(0)"},
		{rpc.Kind(9), "Kind(9)"},
		{rpc.FrameMalformed, "malformed"},
		{rpc.FrameDuplicateID, "duplicate id"},
		{rpc.FrameErrorKind(0), "FrameErrorKind(0)"},
		{rpc.FrameErrorKind(200), "FrameErrorKind(200)"},
		{rpc.In, "in"},
		{rpc.Out, "out"},
		{rpc.Direction(0), "Direction(0)"},
		{rpc.Direction(3), "Direction(3)"},
	} {
		if s := tt.got.String(); s != tt.want {
			t.Errorf("%#v.String() = %q, want %q", tt.got, s, tt.want)
		}
	}
}
