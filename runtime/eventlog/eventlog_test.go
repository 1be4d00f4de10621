package eventlog_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/bridgekit/bridgekit/runtime/eventlog"
	"github.com/bridgekit/bridgekit/runtime/eventlog/logtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestMemory(t *testing.T) {
	logtest.Run(t, func(t *testing.T, maxBytes int64) eventlog.Log { return eventlog.NewMemory(maxBytes) })
}

// A replay reads events while the log is appended to and drops old ones.
func TestMemoryReplayWhileAppending(t *testing.T) {
	l := eventlog.NewMemory(64 << 10)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for id := uint64(1); id <= 20000; id++ {
			l.Append("s", eventlog.Event{ID: id, Frame: []byte(`{"jsonrpc":"2.0","method":"x"}`)})
		}
	}()
	for {
		select {
		case <-done:
			return
		default:
		}
		var last uint64
		st, _, _ := l.Stat("s")
		l.Replay("s", st.Dropped, func(e eventlog.Event) error {
			if e.ID <= last || len(e.Frame) == 0 {
				t.Fatalf("event %d after %d", e.ID, last)
			}
			last = e.ID
			return nil
		})
	}
}

func TestMemoryTotal(t *testing.T) {
	logtest.RunTotal(t, func(t *testing.T, perKey, total int64) eventlog.Log { return eventlog.NewMemoryLimits(perKey, total) })
}
