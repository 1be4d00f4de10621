package main

import (
	"bufio"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/frames"
	"github.com/bridgekit/bridgekit/runtime/redact"
)

// BenchmarkRecorder records round trips of the frames TestTraceOverhead
// sends (a session/prompt request and its reply) as trace --out does, on
// the recording goroutine: classify, mask, encode the record, write the
// JSONL. Under sustained load trace runs at this speed.
func BenchmarkRecorder(b *testing.B) {
	rec := &recorder{session: "s", cls: frames.New(""), red: redact.FromEnv(nil), jsonl: bufio.NewWriterSize(io.Discard, 64<<10)}
	at := time.Now()
	var req, resp [][]byte
	for i := range 1024 {
		req = append(req, fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"method":"session/prompt","params":{"sessionId":"sess-0123456789","prompt":[{"type":"text","text":"Summarise the open pull requests and flag the ones that touch the runtime."}]}}`, i+1))
		resp = append(resp, fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"result":{"stopReason":"end_turn","_meta":{"usage":{"inputTokens":120,"outputTokens":48}}}}`, i+1))
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		k := i % len(req)
		rec.frame(frames.In, at, req[k], len(req[k]), false, false)
		rec.frame(frames.Out, at, resp[k], len(resp[k]), false, false)
		i++
	}
	if rec.problems != 0 {
		b.Fatalf("%d problems", rec.problems)
	}
}
