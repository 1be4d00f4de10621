package shells

import (
	"errors"

	"github.com/bridgekit/bridgekit/runtime/rpc"
)

// Sentinel errors. Every error a Provider handler returns matches exactly one
// of them with errors.Is, and also unwraps (errors.As) to a *rpc.Error
// carrying the JSON-RPC code the catalogue prescribes, so a dispatcher can
// put it on the wire unchanged.
var (
	// ErrUnknownShell: shell_id names no shell the host knows.
	// Code -32602, data {"shell_id": ...}.
	ErrUnknownShell = errors.New("unknown shell")
	// ErrNoShell: the host has no available shell to use as the default.
	// Code -32000.
	ErrNoShell = errors.New("no usable shell")
	// ErrShellUnavailable: the chosen shell's executable is missing or not
	// executable on this machine. Code -32000, data {"shell_id": ...}.
	ErrShellUnavailable = errors.New("shell not available")
	// ErrInvalidInvocation: process.shell_invocation arguments that cannot be
	// honoured (missing command, login or interactive mode the shell lacks,
	// contradicting shell_id and shell). Code -32602.
	ErrInvalidInvocation = errors.New("invalid shell invocation")
)

// codeServerError is the JSON-RPC implementation-defined server error the
// catalogue uses for "no usable shell" and "shell not available".
const codeServerError int64 = -32000

// shellError ties a sentinel to the JSON-RPC error sent on the wire. Its
// message is the wire message.
type shellError struct {
	kind error
	rpc  *rpc.Error
}

func (e *shellError) Error() string   { return e.rpc.Message }
func (e *shellError) Unwrap() []error { return []error{e.kind, e.rpc} }

func newError(kind error, code int64, msg string, shellID *string) error {
	var data any
	if shellID != nil {
		data = map[string]string{"shell_id": *shellID}
	}
	return &shellError{kind: kind, rpc: rpc.NewError(code, msg, data)}
}
