package jsonrpc

import (
	"testing"

	"github.com/bridgekit/bridgekit/runtime/rpc"
)

// promptFrame is a ~430-byte session/prompt request.
var promptFrame = []byte(`{"jsonrpc":"2.0","id":17,"method":"session/prompt","params":{"sessionId":"sess_01J9Z8Q4M7X2K5V3T6W1R0N8BC",` +
	`"prompt":[{"type":"text","text":"Summarise the failing test in pkg/runtime and propose a minimal fix. Keep the public API unchanged, ` +
	`explain the root cause, and list the files you touch. Thanks"},{"type":"text","text":"Be brief, please."}],` +
	`"_meta":{"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}}}`)

// BenchmarkDecode measures Codec.Decode on the same request.
func BenchmarkDecode(b *testing.B) {
	var c Codec
	var m rpc.Message
	b.SetBytes(int64(len(promptFrame)))
	b.ReportAllocs()
	for b.Loop() {
		if err := c.Decode(promptFrame, &m); err != nil {
			b.Fatal(err)
		}
	}
}
