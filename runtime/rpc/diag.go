package rpc

import (
	"log/slog"
	"sync"
	"time"
)

// diagnostics reports bad inbound frames away from the read path: reports
// go through a bounded channel to a goroutine of their own, which calls
// Options.OnFrameError and logs at a limited rate. A reader that floods
// garbage while nobody drains stderr therefore never stops the connection
// answering; what cannot be queued is counted and summarised later.
type diagnostics struct {
	log  *slog.Logger
	on   func(*FrameError)
	ch   chan *FrameError
	quit chan struct{}
	once sync.Once
	stop func()

	mu      sync.Mutex
	dropped int // reports that found the channel full
}

const (
	diagQueue = 64               // reports waiting for the goroutine
	diagBurst = 10               // log lines allowed at once
	diagEvery = time.Second / 10 // then one per this period
)

func (d *diagnostics) init(log *slog.Logger, on func(*FrameError)) {
	d.log, d.on = log, on
	d.ch = make(chan *FrameError, diagQueue)
	d.quit = make(chan struct{})
	d.stop = sync.OnceFunc(func() { close(d.quit) })
}

// report queues fe without ever blocking.
func (d *diagnostics) report(fe *FrameError) {
	d.once.Do(func() { go d.run() })
	select {
	case d.ch <- fe:
	default:
		d.mu.Lock()
		d.dropped++
		d.mu.Unlock()
	}
}

func (d *diagnostics) run() {
	tokens, last := float64(diagBurst), time.Now()
	suppressed := 0
	for {
		select {
		case fe := <-d.ch:
			if d.on != nil {
				d.on(fe)
			}
			now := time.Now()
			tokens = min(diagBurst, tokens+float64(now.Sub(last))/float64(diagEvery))
			last = now
			if tokens < 1 {
				suppressed++
				continue
			}
			tokens--
			d.mu.Lock()
			suppressed += d.dropped
			d.dropped = 0
			d.mu.Unlock()
			args := []any{"kind", fe.Kind.String(), "err", Truncate(errText(fe.Err), 4*MaxEcho), "line", fe.Snippet}
			if !fe.ID.IsZero() {
				args = append(args, "id", Truncate(fe.ID.String(), MaxEcho))
			}
			if suppressed > 0 {
				args = append(args, "suppressed", suppressed)
				suppressed = 0
			}
			d.log.Warn("rpc: bad inbound frame", args...)
		case <-d.quit:
			return
		}
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
