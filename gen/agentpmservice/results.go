package agentpmservice

// Hand-written beside the generated code: the typed errors that results
// carry, and the checks the Harness applies to them.
//
// Knowledge and Memory failures are not error frames: the service answers
// with ok false and a typed error inside the result, which the Harness
// hands to the model. Err turns such a result into an error that compares
// with the package's Err* codes (errors.Is(res.Err(), ErrKnowledgeUnavailable)).

import (
	"fmt"
	"math"

	"github.com/bridgekit/bridgekit/runtime/rpc"
)

// Err returns nil when r is ok, else its typed failure as an *rpc.Error
// whose Name is the failure's code (with its retryable flag); an ok:false
// result without an error is knowledge_runtime_failed.
func (r *KnowledgeRuntimeResult) Err() error {
	if r.Ok {
		return nil
	}
	if r.Error == nil {
		return &rpc.Error{Name: ErrKnowledgeRuntimeFailed.Name, Message: "knowledge result is ok:false without an error"}
	}
	retryable := r.Error.GetRetryable()
	return &rpc.Error{Name: r.Error.Code, Message: r.Error.Message, Retryable: &retryable}
}

// memoryErr is Err for the memory results: ok:false must carry an error,
// else the Harness reads the result as malformed_memory_runtime_response.
func memoryErr(ok bool, f *MemoryRuntimeFailure) error {
	switch {
	case ok:
		return nil
	case f == nil:
		return &rpc.Error{Name: ErrMalformedMemoryRuntimeResponse.Name, Message: "memory result is ok:false without an error"}
	}
	return &rpc.Error{Name: f.Code, Message: f.Message}
}

// Err returns nil when r is ok, else its typed failure (see memoryErr).
func (r *MemoryReadResult) Err() error { return memoryErr(r.Ok, r.Error) }

// Err returns nil when r is ok, else its typed failure.
func (r *MemoryWriteResult) Err() error { return memoryErr(r.Ok, r.Error) }

// Err returns nil when r is ok, else its typed failure.
func (r *MemoryCountResult) Err() error { return memoryErr(r.Ok, r.Error) }

// Err returns nil when r is ok, else its typed failure.
func (r *MemoryStateResult) Err() error { return memoryErr(r.Ok, r.Error) }

// Err returns nil when r is ok, else its typed failure.
func (r *MemoryStoreStateResult) Err() error { return memoryErr(r.Ok, r.Error) }

// Err returns nil when r is ok, else its typed failure (commit_failed: the
// batch changed nothing).
func (r *CommitLifecycleResult) Err() error { return memoryErr(r.Ok, r.Error) }

// Embedding returns the numbers an EmbedResult carries, whatever its shape
// (a bare array, vector or values), or nil for none.
func (r *EmbedResult) Embedding() []float64 {
	switch {
	case r == nil:
		return nil
	case r.Numbers != nil:
		return r.Numbers
	case r.Object != nil && r.Object.Vector != nil:
		return r.Object.Vector.Vector
	case r.Object != nil && r.Object.Values != nil:
		return r.Object.Values.Values
	}
	return nil
}

// CheckEmbedding applies the Harness's checks to an embed result for the
// request p: every number finite, as many as p.Dimensions, and an L2 norm
// within 0.01 of 1 when p.Normalized. It returns the numbers, or an
// *rpc.Error with code malformed_embedding_response saying what is wrong.
func CheckEmbedding(p *EmbedPayload, r *EmbedResult) ([]float64, error) {
	v := r.Embedding()
	bad := func(format string, args ...any) ([]float64, error) {
		return nil, &rpc.Error{Name: ErrMalformedEmbeddingResponse.Name, Message: fmt.Sprintf(format, args...)}
	}
	if int64(len(v)) != p.Dimensions {
		return bad("embedding has %d numbers, want %d", len(v), p.Dimensions)
	}
	var sum float64
	for i, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return bad("embedding number %d is not finite", i)
		}
		sum += x * x
	}
	if norm := math.Sqrt(sum); p.Normalized && math.Abs(norm-1) > 0.01 {
		return bad("embedding is not normalized: its L2 norm is %g", norm)
	}
	return v, nil
}

// Outcome is what an approval decision means: approve (approve, approved),
// deny (deny, denied) or pending (pending, or no decision).
func (d *ApprovalDecision) Outcome() ApprovalDecisionValue {
	switch d.GetDecision() {
	case ApprovalDecisionValueApprove, ApprovalDecisionValueApproved:
		return ApprovalDecisionValueApprove
	case ApprovalDecisionValueDeny, ApprovalDecisionValueDenied:
		return ApprovalDecisionValueDeny
	}
	return ApprovalDecisionValuePending
}
