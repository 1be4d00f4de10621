package service

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/bridgekit/bridgekit/gen/agentpmservice"
)

// Sentinels; every error of this package that is not the provider's own
// answer matches one of them with errors.Is.
var (
	// ErrUnavailable: the provider cannot be used (*UnavailableError says
	// why): found at preflight (Start), or after its restarts ran out.
	ErrUnavailable = errors.New("service: provider unavailable")
	// ErrExited: the provider died while a call waited for its answer
	// (*ExitError, with its exit status and the tail of its stderr).
	ErrExited = errors.New("service: provider exited")
	// ErrTimeout: a call got no answer within its timeout (*TimeoutError).
	ErrTimeout = errors.New("service: request timed out")
	// ErrClosed: the client was closed.
	ErrClosed = errors.New("service: client closed")
	// ErrWrongRole: a frame of the provider names another role in its
	// service member, or none (the cause of the *rpc.FrameError that fails
	// the call it answers).
	ErrWrongRole = errors.New("service: frame of another role")
	// ErrConfig: the Config cannot be used.
	ErrConfig = errors.New("service: invalid configuration")
)

// errDeadline is what a *TimeoutError unwraps to.
var errDeadline = context.DeadlineExceeded

// Reason says why a provider is unavailable.
type Reason string

// Reasons of an *UnavailableError.
const (
	// ReasonStart: the command could not be started.
	ReasonStart Reason = "start_failed"
	// ReasonExited: the provider exited (or closed its stdout) during the
	// handshake.
	ReasonExited Reason = "exited"
	// ReasonTimeout: the handshake took longer than Config.StartupTimeout.
	ReasonTimeout Reason = "handshake_timeout"
	// ReasonProtocol: the provider answered in another protocol.
	ReasonProtocol Reason = "wrong_protocol"
	// ReasonVersion: the provider answered with another protocol version
	// (in the envelope or the readiness), or refused ours.
	ReasonVersion Reason = "wrong_version"
	// ReasonRole: the provider reported another role (in its frames or its
	// readiness), or said it does not serve the requested one.
	ReasonRole Reason = "wrong_role"
	// ReasonRegistry: the readiness names another registry id.
	ReasonRegistry Reason = "registry_mismatch"
	// ReasonNotReady: the readiness says ready false.
	ReasonNotReady Reason = "not_ready"
	// ReasonCapability: the provider does not advertise what its role, or
	// this configuration, needs (an embedding space, a knowledge mode, the
	// memory descriptor, a configured hook, a package attestation, ...).
	ReasonCapability Reason = "insufficient_capabilities"
	// ReasonHandshake: the handshake failed otherwise: an error frame, a
	// malformed answer.
	ReasonHandshake Reason = "handshake_failed"
	// ReasonUnsafeMetadata: the handshake payload would carry the value of
	// a secret environment variable; it is not sent.
	ReasonUnsafeMetadata Reason = "unsafe_metadata"
	// ReasonRestarts: the provider died and its restart budget is spent.
	ReasonRestarts Reason = "restarts_exhausted"
)

// UnavailableError reports a provider, or one of its knowledge packages,
// that cannot be used. It is what preflight reports instead of a failure
// later: Start returns it, Preflight lists the packages, and every call
// made after the provider became unavailable returns it. Nothing falls
// back to another runtime.
type UnavailableError struct {
	Role       agentpmservice.ServiceRole
	RegistryID string
	// Package and Version name the knowledge package that alone is
	// unavailable; empty when the whole provider is.
	Package, Version string
	Reason           Reason
	Detail           string
	// Stderr is the end of what the provider wrote on stderr, when it
	// exited.
	Stderr string
	// Err is the underlying failure, if any.
	Err error
}

func (e *UnavailableError) Error() string {
	what := fmt.Sprintf("%s provider %q", e.Role, e.RegistryID)
	if e.Package != "" {
		what = fmt.Sprintf("package %s@%s of %s", e.Package, e.Version, what)
	}
	msg := fmt.Sprintf("service: %s unavailable (%s): %s", what, e.Reason, e.Detail)
	if e.Stderr != "" {
		msg += "; stderr: " + e.Stderr
	}
	return msg
}

// Is matches ErrUnavailable.
func (e *UnavailableError) Is(target error) bool { return target == ErrUnavailable }

func (e *UnavailableError) Unwrap() error { return e.Err }

// ExitError reports a provider that died while a call waited for its
// answer. The call is not replayed.
type ExitError struct {
	Role       agentpmservice.ServiceRole
	RegistryID string
	// Method is the call that failed; empty when the provider died
	// between calls (a lifecycle report).
	Method string
	// State is the provider's exit state (status or signal); nil when it
	// could not be collected.
	State *os.ProcessState
	// Stderr is the end of what the provider wrote on stderr
	// (Config.StderrTail bytes at most).
	Stderr string
	// Err is the connection's error.
	Err error
}

func (e *ExitError) Error() string {
	state := "its output ended"
	if e.State != nil {
		state = e.State.String()
	}
	during := ""
	if e.Method != "" {
		during = " during " + e.Method
	}
	msg := fmt.Sprintf("service: %s provider %q exited%s (%s)", e.Role, e.RegistryID, during, state)
	if e.Stderr != "" {
		msg += "; stderr: " + e.Stderr
	}
	return msg
}

// Is matches ErrExited.
func (e *ExitError) Is(target error) bool { return target == ErrExited }

func (e *ExitError) Unwrap() error { return e.Err }

// TimeoutError reports a call that got no answer within its timeout. A
// reply that arrives later is dropped and reported (Stats.LateReplies,
// Config.OnFrameError), never delivered to another call.
type TimeoutError struct {
	Role       agentpmservice.ServiceRole
	RegistryID string
	Method     string
	After      time.Duration
}

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("service: %s provider %q: %s timed out after %v", e.Role, e.RegistryID, e.Method, e.After)
}

// Is matches ErrTimeout.
func (e *TimeoutError) Is(target error) bool { return target == ErrTimeout }

// Unwrap returns context.DeadlineExceeded.
func (e *TimeoutError) Unwrap() error { return errDeadline }
