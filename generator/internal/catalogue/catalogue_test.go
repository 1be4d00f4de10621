package catalogue

import (
	"strings"
	"testing"
)

func TestRealCatalogueValid(t *testing.T) {
	if _, err := Load("../../../spec/catalogue/harn.json"); err != nil {
		t.Fatal(err)
	}
}

func TestValidationErrors(t *testing.T) {
	base := `{"protocol":"p","title":"t","package":"p","framing":"jsonrpc2-ndjson",
	  "sides":[{"name":"a","go":"A"},{"name":"b","go":"B"}],"schemas":["s.schema.json"],"methods":[%s]}`
	for name, tc := range map[string]struct{ method, want string }{
		"unknown member":      {`{"wire":"m","go":"M","from":"a","to":"b","kind":"request","params":null,"result":null,"errors":[],"status":"stable","doc":"","bogus":1}`, "unknown field"},
		"bad kind":            {`{"wire":"m","go":"M","from":"a","to":"b","kind":"call","params":null,"result":null,"errors":[],"status":"stable","doc":""}`, `kind "call"`},
		"bad side":            {`{"wire":"m","go":"M","from":"a","to":"c","kind":"request","params":null,"result":null,"errors":[],"status":"stable","doc":""}`, "must name the two different sides"},
		"unlisted schema":     {`{"wire":"m","go":"M","from":"a","to":"b","kind":"request","params":"o.schema.json#/$defs/x","result":null,"errors":[],"status":"stable","doc":""}`, "is not listed"},
		"bad status":          {`{"wire":"m","go":"M","from":"a","to":"b","kind":"request","params":null,"result":null,"errors":[],"status":"gone","doc":""}`, `status "gone"`},
		"notification result": {`{"wire":"m","go":"M","from":"a","to":"b","kind":"notification","params":null,"result":"s.schema.json#/$defs/x","errors":[],"status":"stable","doc":""}`, "no result"},
		"op selector": {`{"wire":"m","go":"M","from":"a","to":"b","kind":"request","params":null,"result":null,"errors":[],"status":"stable","doc":"",
		   "operations":{"selector":["name"],"payload":"args","items":[{"match":{"other":"x"},"go":"X","args":null,"result":null,"errors":[],"status":"stable","doc":""}]}}`, "lacks selector member"},
		"bad error code": {`{"wire":"m","go":"M","from":"a","to":"b","kind":"request","params":null,"result":null,"errors":[{"code":1.5,"when":"x"}],"status":"stable","doc":""}`, "neither an integer nor a string"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Parse([]byte(strings.Replace(base, "%s", tc.method, 1)))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}
