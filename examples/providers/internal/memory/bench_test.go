package memory

import (
	"fmt"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
)

// BenchmarkWrite is bound by the fsync of each transaction.
func BenchmarkWrite(b *testing.B) {
	s := openStore(b, "", Options{})
	scope := Scope{"user": "bench"}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		if _, err := s.Write(ctx, note(scope, fmt.Sprintf(`{"i":%d,"body":"a note of moderate length"}`, i))); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBatch100 writes 100 records per transaction: one fsync.
func BenchmarkBatch100(b *testing.B) {
	s := openStore(b, "", Options{})
	scope := Scope{"user": "bench"}
	reqs := make([]WriteRequest, 100)
	for i := range reqs {
		reqs[i] = note(scope, fmt.Sprintf(`{"i":%d}`, i))
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Batch(ctx, reqs); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReadFilter filters a scope of 1,000 records.
func BenchmarkReadFilter(b *testing.B) {
	s := openStore(b, "", Options{})
	scope := Scope{"user": "bench"}
	reqs := make([]WriteRequest, 1000)
	for i := range reqs {
		reqs[i] = note(scope, fmt.Sprintf(`{"i":%d,"topic":"t%d"}`, i, i%10))
	}
	if _, err := s.Batch(ctx, reqs); err != nil {
		b.Fatal(err)
	}
	req := readReq(scope, ModeFilter)
	req.Filter = map[string]jsontext.Value{"topic": jsontext.Value(`"t3"`)}
	b.ReportAllocs()
	for b.Loop() {
		if recs, err := s.Read(ctx, req); err != nil || len(recs) != 100 {
			b.Fatal(len(recs), err)
		}
	}
}
