package harness

import (
	"testing"
	"time"
)

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
