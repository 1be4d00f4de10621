package harness

import (
	"strings"
	"testing"
	"time"
)

// The stderr tail keeps the last bytes, at a rune boundary, and says when
// it cut.
func TestTail(t *testing.T) {
	tl := newTail(8)
	tl.Write([]byte("abc"))
	if got := tl.String(); got != "abc" {
		t.Fatalf("%q", got)
	}
	tl.Write([]byte("defgh"))
	tl.Write([]byte("ij"))
	if got := tl.String(); got != "…cdefghij" {
		t.Fatalf("%q", got)
	}
	tl.Write([]byte(strings.Repeat("x", 20) + "é"))
	if got := tl.String(); got != "…xxxxxxé" {
		t.Fatalf("%q", got)
	}
	tl = newTail(2)
	tl.Write([]byte("é")) // 2 bytes
	tl.Write([]byte("b")) // cuts é in half
	if got := tl.String(); got != "…b" {
		t.Fatalf("%q", got)
	}
}

func TestHandlerTimeout(t *testing.T) {
	for _, tc := range []struct{ registered, want time.Duration }{
		{0, 118 * time.Second},
		{120 * time.Second, 118 * time.Second},
		{10 * time.Second, 9 * time.Second},
		{time.Second, 900 * time.Millisecond},
		{100 * time.Millisecond, 90 * time.Millisecond},
	} {
		if got := HandlerTimeout(tc.registered); got != tc.want {
			t.Errorf("HandlerTimeout(%v) = %v, want %v", tc.registered, got, tc.want)
		}
	}
}
