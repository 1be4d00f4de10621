package rpc

import (
	"strings"
	"testing"
)

func TestOverObjects(t *testing.T) {
	many := `{"a":[` + strings.Repeat(`[],`, 200) + `[]]}`
	inString := `{"a":"` + strings.Repeat(`[`, 1000) + `"}`
	for _, c := range []struct {
		f    string
		max  int
		want bool
	}{
		{many, 100, true},
		{many, 300, false},
		{many, -1, false},
		{many, 0, false}, // DefaultMaxObjects
		{inString, 10, false},
		{strings.Repeat(`[]`, DefaultMaxObjects+1), 0, true},
	} {
		if got := OverObjects([]byte(c.f), c.max); got != c.want {
			t.Errorf("OverObjects(%.20q…, %d) = %v", c.f, c.max, got)
		}
	}
}
