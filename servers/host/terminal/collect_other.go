//go:build !linux

package terminal

import (
	"io"
	"os/exec"
	"time"
)

// A collector hands a command's output to its sinks. Elsewhere than Linux
// it is os/exec's copying (one read per write of the command's, at most):
// the coalescing reader is Linux's (collect_linux.go).
type collector struct{}

// newCollector sets c's stdout and stderr to sinks (one sink: both
// streams share it).
func newCollector(c *exec.Cmd, sinks ...io.Writer) (*collector, error) {
	c.Stdout, c.Stderr = sinks[0], sinks[len(sinks)-1]
	return &collector{}, nil
}

func (*collector) abort()               {}
func (*collector) start()               {}
func (*collector) drain()               {}
func (*collector) finish(time.Duration) {} // exec's Wait has copied it all (WaitDelay)
