package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/store"
	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/tracelog"
)

// storeSink writes records to the session store from a goroutine of its
// own, in batches (one transaction per batch), so that the proxy does not
// wait for the disk on every frame. Its queue is bounded: when the store
// falls behind, Put blocks and so does the pump, which is the pipes'
// backpressure.
type storeSink struct {
	db    *store.DB
	queue chan *tracelog.Record
	done  chan struct{}
	mu    sync.Mutex
	err   error
}

const storeQueue = 4096

func openStoreSink(path string) (*storeSink, error) {
	db, err := store.Open(context.Background(), path)
	if err != nil {
		return nil, err
	}
	s := &storeSink{db: db, queue: make(chan *tracelog.Record, storeQueue), done: make(chan struct{})}
	go s.run()
	return s, nil
}

func (s *storeSink) Put(r *tracelog.Record) error {
	c := *r
	s.queue <- &c
	s.mu.Lock()
	defer s.mu.Unlock()
	err := s.err
	s.err = nil
	return err
}

func (s *storeSink) run() {
	defer close(s.done)
	batch := make([]*tracelog.Record, 0, 256)
	for r := range s.queue {
		batch = append(batch[:0], r)
		// Take what else is queued, up to a batch, waiting a moment for more.
		timer := time.NewTimer(20 * time.Millisecond)
	more:
		for len(batch) < cap(batch) {
			select {
			case r, ok := <-s.queue:
				if !ok {
					break more
				}
				batch = append(batch, r)
			case <-timer.C:
				break more
			}
		}
		timer.Stop()
		if err := s.db.Put(context.Background(), batch); err != nil {
			s.mu.Lock()
			if s.err == nil {
				s.err = fmt.Errorf("--store: %w", err)
			}
			s.mu.Unlock()
		}
	}
}

// Close writes what is queued and closes the store.
func (s *storeSink) Close() error {
	close(s.queue)
	<-s.done
	err := s.db.Close()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return s.err
	}
	return err
}
