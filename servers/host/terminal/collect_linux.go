package terminal

import (
	"io"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// A collector reads a command's output pipes into their rings, and bounds
// the CPU a flood of output costs the host per byte, however the command
// cuts its writes (issue 33, finding 8).
//
// Copying a pipe the usual way (os/exec's io.Copy on a pipe the runtime
// polls) wakes the host for every write the command makes: 16 commands
// printing 64-byte lines as fast as they could cost the host 6.4 times
// the CPU per MiB of copying the same bytes in bulk (TestOutputFloodCPU). A collector instead reads
// everything that waits in its pipes, then sleeps while more gathers
// (nobody waits on a pipe then, so the command's writes wake nothing),
// for a delay that grows while reads come back smaller than
// coalesceBytes (by the shortfall, at most 8 times a read), up to
// maxDelay, and halves while they come back larger: a flood is read in
// batches of about coalesceBytes, and a trickle wakes it at most once per
// write or maxDelay. The pipe holds what gathers, so memory stays
// bounded by its capacity (pipeBytes), and a command writing faster than
// the host reads waits in its write.
//
// Nothing waits for the delay: a terminal/output answer reads what is in
// the pipes first (drain), and the command's exit drains them at once.
//
// The pipes' read ends are non-blocking descriptors that only this
// collector uses (not the runtime's poller: that would wake the host on
// each write again); it waits for them in ppoll with an eventfd that
// finish and drain's callers use to wake it.
type collector struct {
	mu    sync.Mutex // held while reading the pipes into the sinks
	fds   []int      // read ends, open until the collector stops
	ended []bool     // fds[i] is at its end
	sinks []io.Writer
	buf   []byte     // for a sink other than a ring
	ev    int        // eventfd: wakes the reader
	wfs   []*os.File // write ends, the command's until started

	finishing atomic.Int64  // unix nanoseconds of the deadline, once finishing
	fin       chan struct{} // closed by finish
	done      chan struct{}
}

// The collector's tuning: it reads about coalesceBytes at a time, at
// most readBytes a read; pipes are enlarged to pipeBytes where the system
// allows (else they keep their 64 KiB).
const (
	coalesceBytes = 512 << 10
	pipeBytes     = 1 << 20
	readBytes     = 512 << 10
	minDelay      = time.Millisecond
	maxDelay      = time.Second
	finishDelay   = 10 * time.Millisecond
)

// newCollector makes the pipes of a command whose stdout and stderr go to
// sinks (one sink: both streams share a pipe) and sets them as c's. Call
// start once c has started, or abort if it did not.
func newCollector(c *exec.Cmd, sinks ...io.Writer) (*collector, error) {
	ev, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		return nil, os.NewSyscallError("eventfd", err)
	}
	col := &collector{ev: ev, sinks: sinks, fin: make(chan struct{}), done: make(chan struct{})}
	for range sinks {
		var p [2]int
		if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
			col.abort()
			return nil, os.NewSyscallError("pipe2", err)
		}
		// A larger pipe gathers more between reads; where the system
		// refuses (a user past its pipe quota), the default stays.
		_, _ = unix.FcntlInt(uintptr(p[0]), unix.F_SETPIPE_SZ, pipeBytes)
		if err := unix.SetNonblock(p[0], true); err != nil {
			unix.Close(p[0])
			unix.Close(p[1])
			col.abort()
			return nil, os.NewSyscallError("fcntl", err)
		}
		col.fds, col.ended = append(col.fds, p[0]), append(col.ended, false)
		col.wfs = append(col.wfs, os.NewFile(uintptr(p[1]), "|1"))
	}
	c.Stdout, c.Stderr = col.wfs[0], col.wfs[len(col.wfs)-1]
	return col, nil
}

// abort closes everything of a collector whose command did not start.
func (c *collector) abort() {
	for _, f := range c.wfs {
		f.Close()
	}
	for _, fd := range c.fds {
		unix.Close(fd)
	}
	c.fds = nil
	unix.Close(c.ev)
	close(c.done)
}

// start closes the host's copies of the write ends (the command has its
// own) and starts reading.
func (c *collector) start() {
	for _, f := range c.wfs {
		f.Close()
	}
	c.wfs = nil
	go c.run()
}

// finish tells the collector the command is gone: it reads on, every
// finishDelay at most, until its pipes end (every process holding them is gone) or
// within, then stops. It returns once the collector has stopped. It is
// called once, after start.
func (c *collector) finish(within time.Duration) {
	c.finishing.Store(time.Now().Add(within).UnixNano())
	close(c.fin)
	one := [8]byte{1}
	_, _ = unix.Write(c.ev, one[:]) // a full counter wakes it as well
	<-c.done
	unix.Close(c.ev) // here: no wake can follow
}

// drain reads what waits in the pipes now, so that an answer is current
// whatever the delay.
func (c *collector) drain() { c.read() }

func (c *collector) run() {
	defer func() {
		c.mu.Lock()
		for _, fd := range c.fds {
			unix.Close(fd)
		}
		c.fds = nil // (a drain then reads nothing)
		c.mu.Unlock()
		close(c.done)
	}()
	sleep := time.NewTimer(maxDelay)
	sleep.Stop()
	var delay time.Duration
	for {
		n, open := c.read()
		if !open {
			return
		}
		deadline := c.finishing.Load()
		if deadline != 0 && time.Now().UnixNano() >= deadline {
			return // what was there at the deadline is read
		}
		if n == 0 {
			// Nothing waits: block until output comes (a flood rarely
			// gets here), a wake, or the deadline.
			timeout := time.Duration(-1)
			if deadline != 0 {
				timeout = time.Until(time.Unix(0, deadline))
			}
			c.wait(timeout)
			continue
		}
		// Let about coalesceBytes gather before the next read: the delay
		// halves after a read of that much or more (the pipe may have
		// filled), and grows by the shortfall, at most 8 times, up to
		// maxDelay, after a smaller one.
		if n >= coalesceBytes {
			delay /= 2
		} else {
			delay = min(max(delay, minDelay)*time.Duration(min(8, coalesceBytes/n)), maxDelay)
		}
		if deadline != 0 {
			// The command is gone and something it left holds the pipe:
			// read on, more often, until the deadline.
			delay = min(delay, finishDelay)
		}
		if delay <= 0 {
			continue
		}
		// On the runtime's clock: a blocking syscall here would hand the
		// thread's P off each time.
		sleep.Reset(delay)
		select {
		case <-sleep.C:
		case <-c.fin:
			sleep.Stop() // (Go 1.23's timers: no stale tick to drain)
		}
	}
}

// wait blocks until one of the pipes is readable or at its end, the
// eventfd is signalled (it resets it), or timeout passes (negative: no
// timeout).
func (c *collector) wait(timeout time.Duration) {
	fds := make([]unix.PollFd, 1, 1+len(c.fds))
	fds[0] = unix.PollFd{Fd: int32(c.ev), Events: unix.POLLIN}
	c.mu.Lock()
	for i, fd := range c.fds { // open until run returns: no other can take their numbers
		if !c.ended[i] {
			fds = append(fds, unix.PollFd{Fd: int32(fd), Events: unix.POLLIN})
		}
	}
	c.mu.Unlock()
	var ts *unix.Timespec
	if timeout >= 0 {
		t := unix.NsecToTimespec(int64(timeout))
		ts = &t
	}
	for {
		_, err := unix.Ppoll(fds, ts, nil)
		if err != unix.EINTR || ts != nil {
			// Interrupted with a timeout (the runtime's preemption
			// signal): the caller looks again, for the time left.
			break
		}
	}
	if fds[0].Revents != 0 {
		var b [8]byte
		_, _ = unix.Read(c.ev, b[:])
	}
}

// read reads what waits in each open pipe into its sink, at most a few
// buffers each (a command writing as fast as it is read cannot hold it
// here), and reports how much it read and whether a pipe is still open.
func (c *collector) read() (total int, open bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, fd := range c.fds {
		for range 4 {
			if c.ended[i] {
				break
			}
			var n int
			var err error
			if r, ok := c.sinks[i].(*ring); ok && r.limit > 0 {
				n, err = r.readFrom(fd, readBytes) // no copy between
			} else {
				if c.buf == nil {
					c.buf = make([]byte, readBytes)
				}
				if n, err = unix.Read(fd, c.buf); n > 0 {
					_, _ = c.sinks[i].Write(c.buf[:n])
				}
			}
			if err == unix.EINTR {
				continue
			}
			if n > 0 {
				// Read again even after a short read: its EAGAIN is cheap,
				// and its end, seen now, ends the terminal now.
				total += n
				continue
			}
			if err == unix.EAGAIN {
				break
			}
			// The end (n == 0), or an error a pipe does not give: either
			// way nothing more comes.
			c.ended[i] = true
		}
		if !c.ended[i] {
			open = true
		}
	}
	return total, open
}

// readFrom reads from fd (non-blocking) straight into the ring's next up
// to want bytes (at most its limit, which must not be 0), as Write would
// have written them. The ring grows by what the pipe holds, not by want.
func (r *ring) readFrom(fd int, want int) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	want = min(want, r.limit)
	if len(r.blocks)*ringBlock < min(r.limit, r.w+want) {
		// New blocks: only as many as the pipe's bytes need (at least
		// one, for a read that finds the end or nothing).
		if avail, err := unix.IoctlGetInt(fd, unix.TIOCINQ); err == nil { // FIONREAD
			want = min(want, max(avail, 1))
		}
	}
	var iov [2 + readBytes/ringBlock][]byte
	iovs := iov[:0]
	for pos, left := r.w, want; left > 0 && len(iovs) < len(iov); {
		i, off := pos/ringBlock, pos%ringBlock
		if i == len(r.blocks) {
			r.blocks = append(r.blocks, make([]byte, min(ringBlock, r.limit-i*ringBlock)))
		}
		seg := r.blocks[i][off:min(len(r.blocks[i]), off+left)]
		iovs = append(iovs, seg)
		left -= len(seg)
		if pos += len(seg); pos == r.limit {
			pos = 0
		}
	}
	n, err := unix.Readv(fd, iovs)
	if n > 0 {
		r.total += int64(n)
		r.n = min(r.limit, r.n+n)
		r.w = (r.w + n) % r.limit
	}
	return n, err
}
