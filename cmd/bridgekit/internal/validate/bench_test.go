package validate

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkValidate validates the recorded traffic of the real ACP agents
// (mixed: initialize, session/new, prompts, a stream of session/update,
// fs, terminal and permission requests, their replies) and reports frames
// per second. Run it alone on an idle machine, on one core:
//
//	go test -run '^$' -bench Validate -cpu 1 ./internal/validate
func BenchmarkValidate(b *testing.B) {
	files, _ := filepath.Glob("../../../../testdata/acp/traffic/*/turn.jsonl")
	if len(files) == 0 {
		b.Fatal("no traffic")
	}
	var streams [][]byte
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		streams = append(streams, data)
	}
	v := newValidator(b, "")
	// Compile every schema the traffic uses before timing.
	for _, s := range streams {
		if _, err := v.Stream("warm", bytes.NewReader(s), func(Problem) {}); err != nil {
			b.Fatal(err)
		}
	}
	n, size := 0, 0
	for _, s := range streams {
		size += len(s)
	}
	b.SetBytes(int64(size))
	b.ResetTimer()
	for b.Loop() {
		for _, s := range streams {
			st, err := v.Stream("bench", bytes.NewReader(s), func(p Problem) { b.Fatalf("%s", p) })
			if err != nil {
				b.Fatal(err)
			}
			n += st.Frames
		}
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "frames/s")
}
