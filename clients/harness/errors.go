package harness

import (
	"errors"
	"fmt"
	"strings"
	"syscall"

	"github.com/bridgekit/bridgekit/runtime/rpc"
)

// ErrNoFrame is matched by the error of a Harness that exited before
// writing any frame: AgentPM exits so when preflight fails or needs an
// agent selected, with the reason on stderr (see ExitError.Stderr).
var ErrNoFrame = errors.New("harness: exited before writing a frame")

// ErrBadFrame is matched by every error caused by a frame of the Harness
// that fails the protocol's gates (see BadFrameError).
var ErrBadFrame = errors.New("harness: bad frame from the Harness")

// ExitError reports a Harness process that ended: before its first frame,
// or in the middle of a session (the calls pending then fail with it).
type ExitError struct {
	Path string
	// Code is the exit status, or -1 when a signal ended the process.
	Code   int
	Signal syscall.Signal
	// Stderr is the end of what the process wrote to stderr (at most
	// Options.StderrTail bytes, "…" marking a cut).
	Stderr string
	// BeforeFrame says that the process wrote no frame at all.
	BeforeFrame bool
	Err         error // from exec.Cmd.Wait
}

func (e *ExitError) Error() string {
	var b strings.Builder
	b.WriteString("harness: ")
	b.WriteString(e.Path)
	if e.Code >= 0 {
		fmt.Fprintf(&b, " exited with status %d", e.Code)
	} else {
		fmt.Fprintf(&b, " was killed by signal %d (%v)", int(e.Signal), e.Signal)
	}
	if e.BeforeFrame {
		b.WriteString(" before writing a frame")
	}
	if s := strings.TrimSpace(e.Stderr); s != "" {
		b.WriteString("; stderr: ")
		b.WriteString(s)
	}
	return b.String()
}

func (e *ExitError) Unwrap() error { return e.Err }

// Is makes a Harness that exited before its first frame match ErrNoFrame.
func (e *ExitError) Is(target error) bool { return target == ErrNoFrame && e.BeforeFrame }

// BadFrameError is a line the Harness wrote that fails the protocol's
// gates: not a JSON envelope, a numeric id, another protocol or version,
// an unknown kind, a line too long. The client treats it as fatal, as the
// AgentPM SDKs do: the session ends, the process is stopped and every
// pending call fails with it, so that a garbled reply can never leave a
// call waiting. It unwraps to the *rpc.FrameError, whose cause matches
// envelope.ErrMalformed, ErrProtocol, ErrVersion or ErrKind.
type BadFrameError struct {
	Frame *rpc.FrameError
	// Line is the start of the offending line.
	Line string
}

func (e *BadFrameError) Error() string {
	return fmt.Sprintf("harness: bad frame from the Harness: %v in %q", e.Frame.Err, e.Line)
}

func (e *BadFrameError) Unwrap() error { return e.Frame }

// Is makes every BadFrameError match ErrBadFrame.
func (e *BadFrameError) Is(target error) bool { return target == ErrBadFrame }
