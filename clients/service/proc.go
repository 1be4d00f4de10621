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
	codec  *codec
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
	p.codec = &codec{Codec: agentpmservice.NewCodec(cfg.idPrefix(), "").(*envelope.Codec), role: string(cfg.Role), base: base}
	p.codec.last.Store(base)
	opts := agentpmservice.ConnOptions(&cfg.Conn)
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
	p.conn = rpc.NewConn(fromChild, p.stdin, p.codec, nil, opts)
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

// codec is the agentpm-service codec as the client reads the provider's
// frames. Request ids continue across restarts (base is the last id of the
// previous process), so a late reply can never match another call. Frames
// the provider writes are never answered: a reply that fails the
// protocol's gates, or names another role, fails the call whose id it
// carries; a line whose id cannot be read fails the pending call (the
// client sends one request at a time), as the Harness does. A request frame
// (the protocol has none from a provider) is dropped and reported; events
// are read and ignored, unless one carries the pending request's id: that
// fails the call, as it does the Harness's.
type codec struct {
	*envelope.Codec
	role string
	base uint64
	last atomic.Uint64 // the highest id number written
	// pending is the id number of the request last written while it has
	// not been answered, 0 for none.
	pending atomic.Uint64
}

// AppendHead implements rpc.Codec, numbering requests after base.
func (k *codec) AppendHead(dst []byte, h *rpc.Header) []byte {
	if h.Kind != rpc.KindRequest {
		return k.Codec.AppendHead(dst, h)
	}
	hh := *h
	hh.Seq += k.base
	for last := k.last.Load(); hh.Seq > last && !k.last.CompareAndSwap(last, hh.Seq); last = k.last.Load() {
	}
	k.pending.Store(hh.Seq)
	return k.Codec.AppendHead(dst, &hh)
}

// AppendID implements rpc.Codec.
func (k *codec) AppendID(dst []byte, seq uint64) []byte { return k.Codec.AppendID(dst, k.base+seq) }

// Seq implements rpc.Codec.
func (k *codec) Seq(id []byte) (uint64, bool) {
	n, ok := k.Codec.Seq(id)
	if !ok || n <= k.base {
		return 0, false
	}
	return n - k.base, true
}

// answered clears pending when id answers it.
func (k *codec) answered(id []byte) {
	if n, ok := k.Codec.Seq(id); ok {
		k.pending.CompareAndSwap(n, 0)
	}
}

// Decode implements rpc.Codec.
func (k *codec) Decode(line []byte, m *rpc.Message) error {
	err := k.Codec.Decode(line, m)
	if err == nil && m.Kind == rpc.KindRequest {
		// Dropped and reported: neither answered nor taken for a reply.
		return &rpc.FrameError{Kind: rpc.FrameInvalid, Err: fmt.Errorf("%w: a provider sends no requests (%s)", envelope.ErrKind,
			rpc.Truncate(string(m.Method), rpc.MaxEcho))}
	}
	if err == nil && m.Kind == rpc.KindNotification && len(m.ID) > 0 {
		if n, ok := k.Codec.Seq(m.ID); ok && n != 0 && k.pending.CompareAndSwap(n, 0) {
			// The Harness fails a call answered by any frame but a reply.
			return &rpc.FrameError{Kind: rpc.FrameInvalid, Claimed: rpc.KindResponse, ID: rpc.RawID(m.ID),
				Err: fmt.Errorf("%w: an event carries the id of the pending request, which only its reply may carry", envelope.ErrKind)}
		}
	}
	if err == nil && (m.Kind == rpc.KindResponse || m.Kind == rpc.KindError) {
		k.answered(m.ID)
		if string(m.Qualifier) != k.role {
			what := "no service member"
			if len(m.Qualifier) > 0 {
				what = fmt.Sprintf("service %q", rpc.Truncate(string(m.Qualifier), rpc.MaxEcho))
			}
			err = &rpc.FrameError{Kind: rpc.FrameInvalid, Claimed: m.Kind, ID: rpc.RawID(m.ID),
				Err: fmt.Errorf("%w: the reply has %s; this is a %s provider", ErrWrongRole, what, k.role)}
		}
	}
	fe, ok := err.(*rpc.FrameError)
	if !ok {
		return err
	}
	fe.Reply = nil // the provider's frames are never answered
	if fe.ID.IsZero() {
		// Whose answer it was cannot be read: the pending call's.
		if n := k.pending.Swap(0); n != 0 {
			fe.ID = rpc.RawID(k.Codec.AppendID(nil, n))
		}
	} else {
		k.answered(fe.ID.Raw())
	}
	if !fe.ID.IsZero() {
		fe.Claimed = rpc.KindResponse // fails the call with that id, if one waits
	}
	return fe
}
