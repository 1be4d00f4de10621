package memory

import (
	"errors"
	"fmt"
)

// Code is a memory runtime failure code, as carried in a result's
// error.code on the wire.
type Code string

// The codes the store returns. Harness interprets not_found,
// capacity_exceeded, constraint_violation, record_type_mismatch and
// contract_violation; conflict, unsupported_capability and commit_failed
// are the providers' own.
const (
	CodeNotFound            Code = "not_found"
	CodeConflict            Code = "conflict"
	CodeCapacityExceeded    Code = "capacity_exceeded"
	CodeConstraintViolation Code = "constraint_violation"
	CodeRecordTypeMismatch  Code = "record_type_mismatch"
	CodeContractViolation   Code = "contract_violation"
	CodeUnsupported         Code = "unsupported_capability"
	CodeCommitFailed        Code = "commit_failed"
)

// Error is a typed memory failure: a provider puts Code and Message in
// the result's error member (ok:false). Err, when set, is the failure that
// caused it (the failed write inside a lifecycle commit).
type Error struct {
	Code    Code
	Message string
	Err     error
}

func (e *Error) Error() string { return string(e.Code) + ": " + e.Message }

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Is matches the sentinel of the same code, so
// errors.Is(err, memory.ErrNotFound) holds for every not_found failure.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Message == "" && t.Err == nil && t.Code == e.Code
}

// Sentinels, one per code, for errors.Is.
var (
	ErrNotFound            = &Error{Code: CodeNotFound}
	ErrConflict            = &Error{Code: CodeConflict}
	ErrCapacityExceeded    = &Error{Code: CodeCapacityExceeded}
	ErrConstraintViolation = &Error{Code: CodeConstraintViolation}
	ErrRecordTypeMismatch  = &Error{Code: CodeRecordTypeMismatch}
	ErrContractViolation   = &Error{Code: CodeContractViolation}
	ErrUnsupported         = &Error{Code: CodeUnsupported}
	ErrCommitFailed        = &Error{Code: CodeCommitFailed}
)

// Store-level errors, which are not domain failures: a provider reports
// them as service errors.
var (
	// ErrClosed: the store was closed.
	ErrClosed = errors.New("memory: store closed")
	// ErrLocked: another process holds the database file.
	ErrLocked = errors.New("memory: database is locked by another process")
	// ErrCorrupt: the database file is not a store of this package or
	// fails its consistency check.
	ErrCorrupt = errors.New("memory: database corrupt or of another format")
)

func fail(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}
