package eventlog

import (
	"fmt"
	"testing"
)

// Events dropped by the bound per key do not pile up in the order of appends that the bound in all
// keeps: it holds about as many entries as there are events retained.
func TestMemoryOrderBounded(t *testing.T) {
	m := NewMemoryLimits(400, 1<<20)
	for id := uint64(1); id <= 100000; id++ {
		m.Append(fmt.Sprint(id%3), Event{ID: id, Frame: []byte(`{"jsonrpc":"2.0","method":"n"}`)})
		if pending := len(m.order) - m.ohead; pending > 2*m.live+65 {
			t.Fatalf("after %d: %d entries for %d events", id, pending, m.live)
		}
	}
	if cap(m.order) > 1024 {
		t.Errorf("order's capacity %d for %d events", cap(m.order), m.live)
	}
}
