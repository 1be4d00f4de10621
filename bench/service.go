package bench

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// errUnknownMethod is returned by serve for a method the service lacks;
// each adapter turns it into its runtime's "method not found" error.
var errUnknownMethod = errors.New("method not found")

// maxBarrierWait bounds how long bench/barrier waits for notifications, so a
// runtime that lost some still answers (with the count it saw).
const maxBarrierWait = 30 * time.Second

// Service is the server-side logic shared by every adapter: each adapter
// decodes params with its own runtime's codec and calls into it, so all
// runtimes do the same work per message.
type Service struct {
	// Hold bounds how long bench/block waits for its context to be
	// cancelled (default 5ms).
	Hold time.Duration
	// BlockStarted, if set, receives a value (without blocking) whenever a
	// bench/block handler starts.
	BlockStarted chan struct{}
	// BlockEnded, if set, receives (blocking) whether each bench/block
	// handler observed the cancellation of its context.
	BlockEnded chan bool

	mu      sync.Mutex
	seen    int64
	waiters []waiter

	cancelled atomic.Int64
}

type waiter struct {
	want int64
	ch   chan struct{}
}

// Seen returns the number of session/update notifications handled.
func (s *Service) Seen() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seen
}

// Cancelled returns how many bench/block handlers saw their context end.
func (s *Service) Cancelled() int64 { return s.cancelled.Load() }

func (s *Service) prompt(p *PromptParams) *PromptResult {
	return &PromptResult{StopReason: "end_turn", Echoed: promptSize(p)}
}

func (s *Service) update(*PromptParams) {
	s.mu.Lock()
	s.seen++
	if len(s.waiters) > 0 {
		kept := s.waiters[:0]
		for _, w := range s.waiters {
			if s.seen >= w.want {
				close(w.ch)
			} else {
				kept = append(kept, w)
			}
		}
		s.waiters = kept
	}
	s.mu.Unlock()
}

func (s *Service) barrier(ctx context.Context, p *BarrierParams) *BarrierResult {
	s.mu.Lock()
	if s.seen >= p.Want {
		seen := s.seen
		s.mu.Unlock()
		return &BarrierResult{Seen: seen}
	}
	w := waiter{want: p.Want, ch: make(chan struct{})}
	s.waiters = append(s.waiters, w)
	s.mu.Unlock()
	t := time.NewTimer(maxBarrierWait)
	defer t.Stop()
	select {
	case <-w.ch:
	case <-ctx.Done():
	case <-t.C:
	}
	return &BarrierResult{Seen: s.Seen()}
}

func (s *Service) block(ctx context.Context) *PromptResult {
	if s.BlockStarted != nil {
		select {
		case s.BlockStarted <- struct{}{}:
		default:
		}
	}
	hold := s.Hold
	if hold <= 0 {
		hold = 5 * time.Millisecond
	}
	t := time.NewTimer(hold)
	defer t.Stop()
	saw := false
	select {
	case <-ctx.Done():
		saw = true
		s.cancelled.Add(1)
	case <-t.C:
	}
	if s.BlockEnded != nil {
		s.BlockEnded <- saw
	}
	return &PromptResult{StopReason: "cancelled"}
}

// serve runs method with params decoded from raw by dec, the runtime's own
// params decoder. It returns the result to send, or an error.
func serve[R any](ctx context.Context, s *Service, method string, raw R, dec func(R, any) error) (any, error) {
	switch method {
	case MethodPrompt:
		var p PromptParams
		if err := dec(raw, &p); err != nil {
			return nil, err
		}
		return s.prompt(&p), nil
	case MethodUpdate:
		var p PromptParams
		if err := dec(raw, &p); err != nil {
			return nil, err
		}
		s.update(&p)
		return nil, nil
	case MethodBarrier:
		var p BarrierParams
		if err := dec(raw, &p); err != nil {
			return nil, err
		}
		return s.barrier(ctx, &p), nil
	case MethodBlock:
		return s.block(ctx), nil
	}
	return nil, errUnknownMethod
}

// waitSeen waits until want notifications have been handled, at most
// timeout, and reports whether they were.
func (s *Service) waitSeen(want int64, timeout time.Duration) bool {
	s.mu.Lock()
	if s.seen >= want {
		s.mu.Unlock()
		return true
	}
	w := waiter{want: want, ch: make(chan struct{})}
	s.waiters = append(s.waiters, w)
	s.mu.Unlock()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-w.ch:
		return true
	case <-t.C:
		return false
	}
}
