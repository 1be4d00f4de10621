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

// BenchmarkRecorderBatch is BenchmarkRecorder through the recording
// queue's path: batches of 64 lines, each batch's checks, masking and
// encoding shared among GOMAXPROCS goroutines.
func BenchmarkRecorderBatch(b *testing.B) {
	rec := &recorder{session: "s", cls: frames.New(""), red: redact.FromEnv(nil), jsonl: bufio.NewWriterSize(io.Discard, 64<<10)}
	at := time.Now()
	var lines []queued
	for i := range 1024 {
		req := fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"method":"session/prompt","params":{"sessionId":"sess-0123456789","prompt":[{"type":"text","text":"Summarise the open pull requests and flag the ones that touch the runtime."}]}}`, i+1)
		resp := fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"result":{"stopReason":"end_turn","_meta":{"usage":{"inputTokens":120,"outputTokens":48}}}}`, i+1)
		lines = append(lines, queued{frames.In, at, req, len(req), false, false}, queued{frames.Out, at, resp, len(resp), false, false})
	}
	const perBatch = 64
	b.ReportAllocs()
	var jobs []job
	i := 0
	for b.Loop() {
		// One op is one round trip, as in BenchmarkRecorder.
		if i%(perBatch/2) == 0 {
			k := (i * 2) % len(lines)
			jobs = rec.record(lines[k:k+perBatch], jobs)
		}
		i++
	}
	if rec.problems != 0 {
		b.Fatalf("%d problems", rec.problems)
	}
}
