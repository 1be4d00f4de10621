package attest_test

import (
	"bytes"
	"testing"

	"github.com/bridgekit/bridgekit/servers/host/attest"
	"github.com/go-json-experiment/json"
)

// FuzzDecode feeds one input to both decoders: whatever ParseArgs accepts
// re-encodes to args it accepts again with the same value, and whatever
// CheckSuccess accepts is the success document up to order and spacing.
func FuzzDecode(f *testing.F) {
	for _, seed := range []string{
		`{"authority_kind":"native_approval","event_fingerprint":"` + fpA + `","plan_fingerprint":"` + fpB + `","hypothesis_id":"h","operation_receipt_id":"r","run_id":null}`,
		`{"authority_kind":"lifecycle_audit","event_fingerprint":"` + fpA + `","plan_fingerprint":"` + fpA + `","hypothesis_id":"h","operation_receipt_id":"r","run_id":"x"}`,
		string(attest.Success()),
		`{"_meta":{"harn":{"hostResult":{"kind":"hypothesis_native_attestation","schema":"harn.host-result.v1"}}}}`,
		`{"_meta":{"harn":{"hostResult":{"schema":"harn.host-result.v1","kind":"hypothesis_native_attestation","x":1}}}}`,
		`{}`, `null`, `[`, ``,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if b, err := attest.ParseArgs(in); err == nil {
			out, err := json.Marshal(b)
			if err != nil {
				t.Fatal(err)
			}
			b2, err := attest.ParseArgs(out)
			if err != nil || !attest.Equal(b2, b) {
				t.Fatalf("re-encoded args %s: %v", out, err)
			}
		}
		if attest.CheckSuccess(in) == nil {
			var got, want any
			if json.Unmarshal(in, &got) != nil || json.Unmarshal(attest.Success(), &want) != nil {
				t.Fatal("accepted undecodable input")
			}
			a, _ := json.Marshal(got, json.Deterministic(true))
			w, _ := json.Marshal(want, json.Deterministic(true))
			if !bytes.Equal(a, w) {
				t.Fatalf("accepted %s", in)
			}
		}
	})
}
