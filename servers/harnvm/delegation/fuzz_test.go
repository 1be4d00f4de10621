package delegation_test

import (
	"testing"

	"github.com/bridgekit/bridgekit/servers/harnvm/delegation"
	"github.com/go-json-experiment/json/jsontext"
)

// FuzzParse feeds one input to the three readers of peer documents: none
// panics, a checkpoint always has a plan and an id, and usage is never
// negative.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		`{"capabilities":{"externalAgent":` + seedAdvert + `}}`,
		`{"checkpoint":{"checkpoint_id":"c","plan":"p","scope":["a"]}}`,
		`{"budget_used":{"usd":1,"tokens":2,"seconds":3,"tool_calls":4}}`,
		`{"usage":{"cost_usd":-1}}`, `{"budget":{"used":{"token_count":1e3}}}`, `[]`, `null`,
	} {
		f.Add([]byte(seed))
	}
	req := request("k")
	f.Fuzz(func(t *testing.T, in []byte) {
		v := jsontext.Value(in)
		c, err := delegation.ParseCapabilities(v)
		if err == nil && len(c.Missing()) > 4 {
			t.Fatal("more than four missing capabilities")
		}
		if cp, err := delegation.ParseCheckpoint(v, &req); err == nil && cp != nil && (cp.Plan == "" || cp.ID == "") {
			t.Fatalf("checkpoint without plan or id: %+v", cp)
		}
		if u, err := delegation.ParseUsage(v); err == nil && u != nil && u.USD != nil && *u.USD < 0 {
			t.Fatalf("negative usage %v", *u.USD)
		}
	})
}
