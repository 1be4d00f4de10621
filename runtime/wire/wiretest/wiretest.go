// Package wiretest holds the checks that generated fuzz targets and golden
// tests share: a document that decodes must re-encode to a document that
// decodes to the same thing, and encoding must be stable.
package wiretest

import (
	"bytes"
	"testing"

	"github.com/go-json-experiment/json"

	"github.com/bridgekit/bridgekit/runtime/wire"
)

// Seed adds the valid documents (each must decode into a T) to f's seed corpus,
// plus JSON values every decoder must reject or accept without panicking.
func Seed[T any](f *testing.F, valid ...string) {
	for _, d := range valid {
		var v T
		if err := json.Unmarshal([]byte(d), &v); err != nil {
			f.Fatalf("seed %s does not decode into %T: %v", d, v, err)
		}
		f.Add([]byte(d))
	}
	for _, d := range []string{`{}`, `[]`, `null`, `""`, `0`, `{"a":`, `{"a":1,"a":2}`} {
		f.Add([]byte(d))
	}
}

// RoundTrip decodes data into a T; if that succeeds, the encoding must
// succeed, decode again, and encode to the same bytes. It is a fuzz body:
// f.Fuzz(wiretest.RoundTrip[harn.Shell]).
func RoundTrip[T any](t *testing.T, data []byte) {
	var v T
	if json.Unmarshal(data, &v) != nil {
		return
	}
	out, err := json.Marshal(&v, wire.Fidelity)
	if err != nil {
		t.Fatalf("decoded %T from %q but cannot encode it: %v", v, data, err)
	}
	var w T
	if err := json.Unmarshal(out, &w); err != nil {
		t.Fatalf("%T: re-encoded document does not decode: %v\n in: %q\nout: %s", v, err, data, out)
	}
	again, err := json.Marshal(&w, wire.Fidelity)
	if err != nil || !bytes.Equal(out, again) {
		t.Fatalf("%T: encoding is not stable (%v)\nfirst:  %s\nsecond: %s", v, err, out, again)
	}
}
