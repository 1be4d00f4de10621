package remote

import (
	"reflect"
	"testing"
)

type collect map[string]string

func (c collect) SetMember(name, value []byte) { c[string(name)] = string(value) }

// until hands over members up to the one done waits for and reads no further: what follows may be
// anything, even cut short. An object read to its end is true; anything but an object is false.
func TestUntil(t *testing.T) {
	for _, tc := range []struct {
		frame string
		want  collect
		ok    bool
	}{
		{`{"jsonrpc":"2.0","id":3,"method":"m","params":{"a":[1,2`, collect{"jsonrpc": `"2.0"`, "id": "3"}, true},
		{`{"method":"m","params":{"a":1},"id":"x"}`, collect{"method": `"m"`, "params": `{"a":1}`, "id": `"x"`}, true},
		{`{"method":"m","\u0069d":7,"x":[`, collect{"method": `"m"`, "id": "7"}, true},
		{`{"method":"m"}`, collect{"method": `"m"`}, true},
		{`{"method":"m","params":[1,`, collect{"method": `"m"`}, false},
		{`{}`, collect{}, true},
		{`[1]`, collect{}, false},
		{`"id"`, collect{}, false},
		{``, collect{}, false},
	} {
		got := collect{}
		var s partScanner
		ok := s.until([]byte(tc.frame), got, func() bool { _, id := got["id"]; return id })
		if !reflect.DeepEqual(got, tc.want) || ok != tc.ok {
			t.Errorf("until(%s) = %v, %v; want %v, %v", tc.frame, got, ok, tc.want, tc.ok)
		}
	}
}
