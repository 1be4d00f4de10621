package jsonrpc

import (
	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// This file holds what generated dispatchers and client stubs (package gen/...)
// need from the runtime besides Caller.

// DecodeParams decodes raw params into v. Absent params decode as {}. A
// failure is an *Error with code -32602 whose message says which member is at
// fault; it satisfies errors.Is(err, ErrInvalidParams).
func DecodeParams(raw jsontext.Value, v any) error {
	if len(raw) == 0 {
		raw = jsontext.Value("{}")
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return NewError(CodeInvalidParams, "invalid params: "+err.Error(), nil)
	}
	return nil
}

// MethodNotFound is the -32601 error for a method this peer does not serve.
func MethodNotFound(method string) *Error {
	return NewError(CodeMethodNotFound, "method not found: "+method, nil)
}

// UnsupportedOperation is the -32601 error for an operation, carried inside
// method, that this peer does not serve. Its data names both:
// {"method": ..., "operation": ...}.
func UnsupportedOperation(method, operation string) *Error {
	return NewError(CodeMethodNotFound, method+": unsupported operation "+operation,
		map[string]string{"method": method, "operation": operation})
}
