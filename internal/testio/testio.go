// Package testio holds small I/O helpers for bridgekit's tests.
package testio

import (
	"bytes"
	"sync"
)

// Buffer is a bytes.Buffer that goroutines may write while a test reads
// it: a log sink, or a child's stderr.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns what has been written so far.
func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
