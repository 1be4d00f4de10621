// Package conform drives an implementation of one of bridgekit's protocols
// through a suite of scenarios and reports, scenario by scenario, whether
// it behaved as the protocol's catalogue and rules say.
//
// An implementation is any program, in any language, that speaks the
// protocol on its stdin and stdout. Run starts it in a process group of its
// own, plays the other side of the protocol (a [Side]), and for every
// scenario sends the frames the scenario is made of: valid requests and
// notifications from the catalogue, and the bad inputs the protocol must
// survive. Every frame the implementation writes is classified and decoded
// with the generated types (package frames); a problem fails the scenario
// it arrived in, named by method, frame number and JSON pointer. Expected
// errors are checked by code. A scenario the implementation answers with
// "method not found" where the protocol makes the method optional is
// reported as not implemented, not as a failure.
//
// The implementation is started once and kept for the whole suite. A
// scenario that ends it on purpose (its end of input) has the next one
// start it again; an implementation that dies otherwise ends the run: the
// scenario it died in fails, saying when and how, and the rest are "not
// run". So does the run's deadline, when it passes. The implementation is
// always stopped at the end (end of input, then SIGTERM, then SIGKILL to
// its group), and nothing it started outlives Run.
package conform

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/frames"
	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/syncwriter"
)

// Status is a scenario's outcome.
type Status string

const (
	Pass           Status = "pass"
	Fail           Status = "fail"
	NotImplemented Status = "not implemented"
	// ExpectedFail is a failure the baseline lists.
	ExpectedFail Status = "expected failure"
	// Stale is a baseline entry whose scenario now passes (or no longer
	// exists): itself a failure.
	Stale Status = "stale baseline"
	// NotRun is a scenario the run never reached: the implementation died
	// in an earlier one, or the run's deadline passed. The run fails.
	NotRun Status = "not run"
)

// Failed says whether s fails the run.
func (s Status) Failed() bool { return s == Fail || s == Stale || s == NotRun }

// A Problem is one thing wrong in a scenario: what the implementation did
// against the protocol, where.
type Problem struct {
	Method  string `json:"method,omitempty"`
	Frame   int64  `json:"frame,omitempty"` // the frame's number in the session, both directions counted
	Pointer string `json:"pointer,omitempty"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

func (p Problem) String() string {
	s := ""
	if p.Method != "" {
		s += p.Method + ": "
	}
	if p.Frame > 0 {
		s += fmt.Sprintf("frame %d: ", p.Frame)
	}
	if p.Pointer != "" {
		s += p.Pointer + ": "
	}
	return s + p.Message
}

// Result is the outcome of one scenario.
type Result struct {
	ID       string    `json:"id"`
	Title    string    `json:"title"`
	Status   Status    `json:"status"`
	Detail   string    `json:"detail,omitempty"`
	Problems []Problem `json:"problems,omitempty"`
	// Notes are enum values and union variants the implementation sent
	// that this version does not know: right to accept, worth a word
	// (Config.Strict makes them problems).
	Notes    []Problem     `json:"notes,omitempty"`
	Reason   string        `json:"baseline_reason,omitempty"`
	Duration time.Duration `json:"-"`
	Millis   float64       `json:"duration_ms"`
}

// A Scenario is one check. Run drives the implementation through t and
// reports problems with t.Fail; returning having reported none is a pass.
type Scenario struct {
	ID    string
	Title string
	Run   func(ctx context.Context, t *T)
}

// A Side is one role conform can play against an implementation: its
// protocol family and its scenarios, in the order they run.
type Side struct {
	Name      string
	Family    frames.Family
	Doc       string
	Scenarios func(cfg *Config) []Scenario
	// Answer answers the requests the implementation sends conform (nil:
	// every one gets -32601).
	Answer func(rec Received) (result any, rpcErr *RPCError)
	// Respond, when set, replaces Answer for a protocol that is not
	// JSON-RPC (AgentPM's envelopes): it is given every frame that has a
	// method and an id and returns the whole line to write back, or nil
	// for none.
	Respond func(rec Received) []byte
}

// Config is what a run is given.
type Config struct {
	Argv []string
	// Dir is the implementation's working directory ("" for ours).
	Dir string
	// WorkDir is a directory conform may create files in for scenarios
	// that touch files (the implementation's workspace, ideally).
	WorkDir string
	// Timeout bounds each scenario (default 5s).
	Timeout time.Duration
	// Deadline, when not zero, bounds the whole run: a scenario gets what
	// is left of it at most, and those not begun by then are not run.
	Deadline time.Time
	// Grace is how long the implementation gets to exit at the end of its
	// input before it is signalled (default 2s).
	Grace time.Duration
	// Stderr, when set, gets a copy of the implementation's stderr.
	Stderr io.Writer
	// Progress, when set, is called as each scenario ends.
	Progress func(Result)
	// Only, when not empty, runs only the scenarios with these ids.
	Only []string
	// AuthMethod is the authenticate method an agent is authenticated
	// with when it lists it (acp-agent; "" skips authenticate).
	AuthMethod string
	// Prompt and CancelPrompt are the texts of the prompts the acp-agent
	// and harn-runtime sides send ({file} becomes the absolute path of a
	// file conform made in the session's cwd); CancelPrompt's turn is
	// cancelled once it has begun.
	Prompt, CancelPrompt string
	// Role is the agentpm-service role the implementation serves.
	Role string
	// Strict makes the enum values and union variants this version does
	// not know problems, not notes.
	Strict bool

	// answer, when set by a side's Scenarios, answers the
	// implementation's requests instead of Side.Answer.
	answer func(rec Received) (result any, rpcErr *RPCError)
}

// ErrStart is returned (wrapped) when the implementation cannot be started.
var ErrStart = errors.New("cannot start the implementation")

// Run runs side's scenarios against the implementation cfg.Argv names.
func Run(ctx context.Context, side *Side, cfg Config) ([]Result, error) {
	if cfg.Timeout <= 0 {
		cfg.Timeout = 5 * time.Second
	}
	if cfg.Grace <= 0 {
		cfg.Grace = 2 * time.Second
	}
	var stderr *syncwriter.Writer
	if cfg.Stderr != nil {
		stderr = syncwriter.New(cfg.Stderr)
	}
	scs := side.Scenarios(&cfg)
	var peer *Peer
	start := func() error {
		p, err := startPeer(cfg.Argv, side.Family, stderr, cfg.Dir)
		if err != nil {
			return fmt.Errorf("%w: %v", ErrStart, err)
		}
		p.answer, p.respond = side.Answer, side.Respond
		if cfg.answer != nil {
			p.answer = cfg.answer
		}
		peer = p
		return nil
	}
	if err := start(); err != nil {
		return nil, err
	}
	defer func() { peer.Stop(cfg.Grace) }()

	return runScenarios(ctx, peer, scs, cfg, 0, func() (*Peer, error) {
		peer.Stop(cfg.Grace)
		if err := start(); err != nil {
			return nil, err
		}
		return peer, nil
	})
}

// runScenarios runs scs in order on peer. lastSeq is the last frame
// already accounted for: with 0, what the implementation wrote before the
// first scenario is that scenario's. restart, when not nil, replaces a
// peer that exited.
func runScenarios(ctx context.Context, peer *Peer, scs []Scenario, cfg Config, lastSeq int64, restart func() (*Peer, error)) ([]Result, error) {
	var results []Result
	if !cfg.Deadline.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, cfg.Deadline)
		defer cancel()
	}
	// notRun, once set, says why the scenarios left are not run.
	notRun := ""
	for _, sc := range scs {
		if len(cfg.Only) > 0 && !slices.Contains(cfg.Only, sc.ID) {
			continue
		}
		if notRun == "" && ctx.Err() != nil {
			if cfg.Deadline.IsZero() || !errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return results, ctx.Err()
			}
			notRun = fmt.Sprintf("the run's deadline passed (%s)", cfg.Deadline.Format(time.TimeOnly))
		}
		if notRun != "" {
			r := Result{ID: sc.ID, Title: sc.Title, Status: NotRun, Detail: notRun}
			results = append(results, r)
			if cfg.Progress != nil {
				cfg.Progress(r)
			}
			continue
		}
		if peer.Exited() && restart != nil {
			p, err := restart()
			if err != nil {
				return results, err
			}
			peer, lastSeq = p, 0
		}
		// Frames that came after the previous scenario ended are its.
		if len(results) > 0 {
			attributeLate(&results[len(results)-1], peer.mark(lastSeq))
		} else if lastSeq > 0 {
			peer.forget(lastSeq)
		}
		r, seq, died := runOne(ctx, peer, sc, cfg)
		if seq > lastSeq {
			lastSeq = seq
		}
		results = append(results, r)
		if cfg.Progress != nil {
			cfg.Progress(r)
		}
		if died {
			notRun = "the implementation died in " + sc.ID
		}
	}
	return results, nil
}

// attributeLate fails r with the problems of frames that arrived after
// its scenario ended.
func attributeLate(r *Result, late []Received) {
	t := &T{tolerate: map[string]bool{}}
	t.collectFrom(late)
	if len(t.problems) > 0 {
		r.Status, r.Problems = Fail, append(r.Problems, t.problems...)
	}
}

// runOne runs sc, and says whether the implementation died in it (exited
// when the scenario did not mean it to).
func runOne(ctx context.Context, peer *Peer, sc Scenario, cfg Config) (Result, int64, bool) {
	t := &T{peer: peer, cfg: &cfg, tolerate: map[string]bool{}}
	sctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	began := time.Now()
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer func() {
			if v := recover(); v != nil {
				t.Fail(Problem{Code: "conform", Message: fmt.Sprintf("the scenario itself failed: %v", v)})
			}
		}()
		sc.Run(sctx, t)
	}()
	<-done
	t.collectFrameProblems()
	if sctx.Err() != nil && !t.notImpl && len(t.problems) == 0 {
		if ctx.Err() != nil {
			t.Fail(Problem{Code: "deadline", Message: "the run's deadline passed in this scenario"})
		} else {
			t.Fail(Problem{Code: "timeout", Message: fmt.Sprintf("no conclusion within %v", cfg.Timeout)})
		}
	}
	if _, eof, _ := peer.snapshot(); eof && !peer.Exited() {
		// Its stdout ends as it exits: give the exit a moment to be reaped.
		peer.waitExit(time.Second)
	}
	died := peer.Exited() && !t.exitExpected
	if died && !t.exitReported {
		t.Fail(Problem{Code: "exited", Message: peer.exitDescription()})
	}
	r := Result{ID: sc.ID, Title: sc.Title, Status: Pass, Detail: t.detail, Duration: time.Since(began), Notes: t.notes}
	r.Millis = float64(r.Duration.Microseconds()) / 1000
	switch {
	case len(t.problems) > 0:
		r.Status, r.Problems = Fail, t.problems
	case t.notImpl:
		r.Status = NotImplemented
	}
	return r, t.lastSeq, died
}
