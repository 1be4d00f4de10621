package service

// One provider process: its pipes, its connection, the tail of its stderr.

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"sync/atomic"
	"time"

	"github.com/bridgekit/bridgekit/gen/agentpmservice"
	"github.com/bridgekit/bridgekit/internal/child"
	"github.com/bridgekit/bridgekit/runtime/envelope"
	"github.com/bridgekit/bridgekit/runtime/rpc"
)

// BaselineEnv are the environment variables every provider gets from this
// process's environment, when set: what a program needs to find its
// executables, home, temporary folder, locale and time zone, and nothing
// that usually holds a secret. Config.Env adds names; nothing else of this
// process's environment reaches the provider. It is the allow-list every
// child bridgekit starts shares (clients/harness's too).
var BaselineEnv = child.BaselineEnv

// environ is the provider's environment: BaselineEnv and the names of
// cfg.Env that are set here, then cfg.SetEnv.
func environ(cfg *Config) []string { return child.Environ(cfg.Env, cfg.SetEnv) }

// Grace periods of a provider's end.
const (
	// exitGrace: how long a provider whose stdout ended may take to exit
	// before it is killed (it can no longer answer).
	exitGrace = 100 * time.Millisecond
	// drainGrace: how long the output of a provider that exited is still
	// read, while a process it started holds the pipe open.
	drainGrace = 200 * time.Millisecond
	// waitDelay bounds the wait for the provider's stderr after it exited.
	waitDelay = time.Second
)

// proc is one provider process.
type proc struct {
	gen    int
	cmd    *exec.Cmd
	stdin  *stdin
	conn   *rpc.Conn
	ids    *ids
	stderr *child.Tail
	exited chan struct{} // closed once cmd.Wait has returned
	state  *os.ProcessState
	dead   bool // set by Client.died, under Client.mu
}

// spawn starts the provider with ids continuing after base.
func (c *Client) spawn(gen int, base uint64) (*proc, error) {
	cfg := &c.cfg
	cmd := exec.Command(cfg.Command[0], cfg.Command[1:]...)
	cmd.Dir, cmd.Env, cmd.WaitDelay = cfg.Dir, environ(cfg), waitDelay
	p := &proc{gen: gen, cmd: cmd, exited: make(chan struct{})}
	p.stderr = &child.Tail{Max: cfg.StderrTail, Tee: cfg.Stderr, Redact: c.redactor()}
	cmd.Stderr = p.stderr
	toChild, fromChild, err := child.Start(cmd)
	if err != nil {
		return nil, err
	}
	codec := agentpmservice.NewCodec(cfg.idPrefix(), "").(*envelope.Codec)
	p.ids = &ids{codec: codec, role: string(cfg.Role)}
	p.ids.last.Store(base)
	opts := agentpmservice.ConnOptions(&cfg.Conn)
	// The provider's frames pass the client's gates, then any of Conn's.
	screen, onBad := opts.Screen, opts.OnBadFrame
	opts.NextID = p.ids.next
	opts.Screen = func(m *rpc.Message) *rpc.FrameError {
		if fe := p.ids.screen(m); fe != nil || screen == nil {
			return fe
		}
		return screen(m)
	}
	opts.OnBadFrame = func(fe *rpc.FrameError, line []byte) bool {
		end := onBad != nil && onBad(fe, line)
		return p.ids.badFrame(fe, line) || end
	}
	opts.Logger = child.Logger(opts.Logger, c.redact)
	connHook := opts.OnFrameError
	opts.OnFrameError = func(fe *rpc.FrameError) {
		if fe.Kind == rpc.FrameUnknownResponse {
			c.late.Add(1)
			c.log.Warn("service: dropped a reply that no pending call waits for (a late reply to a request that timed out)",
				"role", cfg.Role, "registry_id", cfg.RegistryID, "id", fe.ID.String())
		}
		if connHook != nil {
			connHook(fe)
		}
		if cfg.OnFrameError != nil {
			cfg.OnFrameError(fe)
		}
	}
	p.stdin = &stdin{File: toChild}
	p.conn = rpc.NewConn(fromChild, p.stdin, codec, nil, opts)
	go func() {
		_ = cmd.Wait()
		p.state = cmd.ProcessState
		child.Reap(cmd.Process) // nothing it started outlives it
		close(p.exited)
	}()
	return p, nil
}

// watch waits for the provider's end, makes sure of it, and reports it.
func (c *Client) watch(p *proc) {
	select {
	case <-p.conn.Done():
		// Its output ended: a provider without stdout can no longer answer.
		// When the client is closing, Close ended it and gives the
		// provider StopGrace to finish (kill here only as a backstop).
		grace := exitGrace
		if c.ctx.Err() != nil {
			grace += c.cfg.StopGrace
		}
		select {
		case <-p.exited:
		case <-time.After(grace):
			p.kill()
			<-p.exited
		}
	case <-p.exited:
		select {
		case <-p.conn.Done():
		case <-time.After(drainGrace):
		}
	}
	p.conn.Close()
	c.died(p)
}

// gone reports whether the provider can no longer answer: its output
// ended or it exited.
func (p *proc) gone() bool {
	select {
	case <-p.conn.Done():
		return true
	case <-p.exited:
		return true
	default:
		return false
	}
}

// stdin is the provider's input; it knows when a write to it is under way.
type stdin struct {
	*os.File
	writing atomic.Int32
}

func (s *stdin) Write(b []byte) (int, error) {
	s.writing.Add(1)
	defer s.writing.Add(-1)
	return s.File.Write(b)
}

// send sends m on p's connection under ctx. A write the provider does not
// take (its input pipe stays full) cannot be interrupted, and a frame cut
// short would corrupt its input: when ctx ends during the write, send
// kills the provider, which ends the write, and reports that it did once
// the provider has exited.
func (p *proc) send(ctx context.Context, m rpc.Outbound, result any) (killed bool, err error) {
	fired := make(chan bool, 1)
	stop := context.AfterFunc(ctx, func() {
		writing := p.stdin.writing.Load() > 0
		if writing {
			p.kill()
		}
		fired <- writing
	})
	err = p.conn.Send(ctx, m, result)
	if stop() || !<-fired {
		return false, err
	}
	<-p.exited
	return true, err
}

// kill ends the process and its group at once (SIGKILL).
func (p *proc) kill() { child.Kill(p.cmd.Process) }

// stop ends the provider: end of input, then after grace SIGTERM to its
// group and, after as long again, SIGKILL; then the rest of its group.
func (p *proc) stop(grace time.Duration) {
	p.conn.Close() // closes its stdin: the provider's cue to exit
	child.Stop(p.cmd.Process, p.exited, grace, grace)
}

// exitError describes the provider's death during method, once it has
// been collected.
func (c *Client) exitError(p *proc, method string, err error) *ExitError {
	<-p.exited // bounded: watch kills a provider whose output ended
	return &ExitError{Role: c.cfg.Role, RegistryID: c.cfg.RegistryID, Method: method, State: p.state, Stderr: p.stderr.String(), Err: err}
}

// The agentpm-service connection as the client reads the provider's
// frames. Request ids continue across restarts (NextID goes on from the
// last id of the previous process), so a late reply can never match
// another call. Frames the provider writes are never answered: a reply
// that fails the protocol's gates, or names another role, fails the call
// whose id it carries; a line whose id cannot be read fails the pending
// call (the client sends one request at a time), as the Harness does. A
// request frame (the protocol has none from a provider) is dropped and
// reported; events are read and ignored, unless one carries the pending
// request's id: that fails the call, as it does the Harness's.

// ids numbers a provider's requests and knows which one is pending.
type ids struct {
	codec *envelope.Codec
	role  string
	last  atomic.Uint64 // the highest id number used
	// pending is the id number of the request last sent while it has not
	// been answered, 0 for none.
	pending atomic.Uint64
	// request: screen refused a request frame (badFrame then leaves the
	// pending call alone). Used by the reading goroutine only.
	request bool
}

// next is the connection's Options.NextID.
func (k *ids) next() uint64 {
	n := k.last.Add(1)
	k.pending.Store(n)
	return n
}

// answered clears pending when id answers it.
func (k *ids) answered(id []byte) {
	if n, ok := k.codec.Seq(id); ok {
		k.pending.CompareAndSwap(n, 0)
	}
}

// screen is the connection's Options.Screen: the gates of a provider's
// frames beyond the protocol's.
func (k *ids) screen(m *rpc.Message) *rpc.FrameError {
	switch m.Kind {
	case rpc.KindRequest:
		// Dropped and reported: neither answered nor taken for a reply.
		k.request = true
		return &rpc.FrameError{Kind: rpc.FrameInvalid, Err: fmt.Errorf("%w: a provider sends no requests (%s)", envelope.ErrKind,
			rpc.Truncate(string(m.Method), rpc.MaxEcho))}
	case rpc.KindNotification:
		if n, ok := k.codec.Seq(m.ID); len(m.ID) > 0 && ok && n != 0 && k.pending.CompareAndSwap(n, 0) {
			// The Harness fails a call answered by any frame but a reply.
			return &rpc.FrameError{Kind: rpc.FrameInvalid, Claimed: rpc.KindResponse, ID: rpc.RawID(m.ID),
				Err: fmt.Errorf("%w: an event carries the id of the pending request, which only its reply may carry", envelope.ErrKind)}
		}
	default:
		k.answered(m.ID)
		if string(m.Qualifier) != k.role {
			what := "no service member"
			if len(m.Qualifier) > 0 {
				what = fmt.Sprintf("service %q", rpc.Truncate(string(m.Qualifier), rpc.MaxEcho))
			}
			return &rpc.FrameError{Kind: rpc.FrameInvalid, Claimed: m.Kind, ID: rpc.RawID(m.ID),
				Err: fmt.Errorf("%w: the reply has %s; this is a %s provider", ErrWrongRole, what, k.role)}
		}
	}
	return nil
}

// badFrame is the connection's Options.OnBadFrame: the provider's frames
// are never answered, and one whose id cannot be read answers the
// pending call.
func (k *ids) badFrame(fe *rpc.FrameError, _ []byte) bool {
	fe.Reply = nil
	if k.request {
		k.request = false
		return false
	}
	if fe.ID.IsZero() {
		if n := k.pending.Swap(0); n != 0 {
			fe.ID = rpc.RawID(k.codec.AppendID(nil, n))
		}
	} else {
		k.answered(fe.ID.Raw())
	}
	if !fe.ID.IsZero() {
		fe.Claimed = rpc.KindResponse // fails the call with that id, if one waits
	}
	return false
}
