package acpversion

import "github.com/bridgekit/bridgekit/runtime/rpc"

// ScreenV2RequestIDs returns an rpc.Options.Screen that refuses, before any handler sees it, a request
// whose id ACP v2 does not allow (see V2RequestID), answering -32600 V2RequestIDMessage under a null id
// as the TypeScript SDK's v2 connection does, while v2 reports true (nil: always); then it applies next,
// the program's own Screen, if any.
func ScreenV2RequestIDs(v2 func() bool, next func(*rpc.Message) *rpc.FrameError) func(*rpc.Message) *rpc.FrameError {
	return func(m *rpc.Message) *rpc.FrameError {
		if m.Kind == rpc.KindRequest && !V2RequestID(m.ID) && (v2 == nil || v2()) {
			e := rpc.NewError(CodeInvalidRequest, V2RequestIDMessage, nil)
			return &rpc.FrameError{Kind: rpc.FrameInvalid, Err: e, Reply: e}
		}
		if next != nil {
			return next(m)
		}
		return nil
	}
}
