package schema

import (
	"strings"
	"testing"
)

func TestUnsupportedKeywordFails(t *testing.T) {
	for _, kw := range []string{"prefixItems", "unevaluatedProperties", "$dynamicRef", "allOf", "if", "patternProperties"} {
		_, err := Parse([]byte(`{"$defs":{"x":{"type":"object","properties":{"a":{"`+kw+`":{}}}}}}`), "t.schema.json")
		if err == nil || !strings.Contains(err.Error(), `unsupported schema keyword "`+kw+`"`) || !strings.Contains(err.Error(), "t.schema.json#/$defs/x/properties/a") {
			t.Errorf("%s: got %v", kw, err)
		}
	}
}

func TestPropertyOrderKept(t *testing.T) {
	s, err := Parse([]byte(`{"type":"object","properties":{"z":{},"a":{},"m":{}}}`), "t")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range s.Properties {
		got = append(got, p.Name)
	}
	if strings.Join(got, ",") != "z,a,m" {
		t.Fatalf("order %v", got)
	}
}

func TestRequiredWithoutProperty(t *testing.T) {
	_, err := Parse([]byte(`{"type":"object","properties":{"a":{}},"required":["b"]}`), "t")
	if err == nil || !strings.Contains(err.Error(), `"b"`) {
		t.Fatalf("got %v", err)
	}
}
