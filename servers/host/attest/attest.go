// Package attest serves Harn's native hypothesis attestation: the host/call
// operation hypothesis.attest_event, which a Harn runtime sends when a script
// asks the host to vouch for an event (harness.obs.hypothesis_event_authority_request).
//
// The contract (seed, "Native hypothesis attestation"):
//
//   - The request's args are exactly authority_kind, event_fingerprint,
//     plan_fingerprint, hypothesis_id, operation_receipt_id and run_id (a
//     string or null); [ParseArgs] reads them strictly into a [Binding],
//     gen/harn's HypothesisAttestArgs.
//   - Success is this exact document and nothing else, which [Success]
//     returns and [CheckSuccess] verifies on the runtime side:
//     {"_meta":{"harn":{"hostResult":{"schema":"harn.host-result.v1","kind":"hypothesis_native_attestation"}}}}
//   - Denial, a stale or mismatched receipt, and a native-operation failure
//     are JSON-RPC errors; there is no successful "denied" result.
//   - The adapter owns operation receipts and binds each to one exact
//     request: an exact retry returns the same success, reuse with different
//     bindings fails.
//
// An [Attestor] implements the receipt rules; [Attestor.Register] installs
// it on a host's harn.HostHandlers (the typed operation field), which is
// also what advertises it. The adapter calls
// [Attestor.Issue] when a native operation completes, and hands the receipt
// id to the script; [Attestor.Attest] then checks the request, asks the
// adapter's [VerifyFunc] once per receipt, and binds the receipt to the
// request on success. It is safe for concurrent use and bounded
// ([Options.MaxReceipts], [Options.TTL]); a receipt it no longer holds
// fails, never succeeds.
//
// # Errors
//
// Every failure is an *[Error] with a [Reason]; [Error.RPCError] gives the
// JSON-RPC error to answer with: code -32602 for invalid_request, -32000 for
// operation_failed and -32001 (the bridge's "rejected") for every other
// reason, message "hypothesis.attest_event: <reason>: <detail>" and data
// {"reason": <reason>} plus "operation_receipt_id" when the request named
// one. Harn itself ignores the code and surfaces the message.
//
// Hosts advertise the operation (capability "hypothesis", operation
// "attest_event") through host/capabilities only while a trusted adapter is
// installed.
package attest

import (
	"bytes"
	"container/list"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/bridgekit/bridgekit/gen/harn"
	"github.com/bridgekit/bridgekit/runtime/rpc"
	"github.com/bridgekit/bridgekit/runtime/wire"
	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Names under which the operation travels and is advertised.
const (
	Operation  = "hypothesis.attest_event"
	Capability = "hypothesis"
	Op         = "attest_event"
)

// The two values of the success document.
const (
	ResultSchema = "harn.host-result.v1"
	ResultKind   = "hypothesis_native_attestation"
)

var successDoc = []byte(`{"_meta":{"harn":{"hostResult":{"schema":"` + ResultSchema + `","kind":"` + ResultKind + `"}}}}`)

// Success returns the success document, a fresh copy each time (always the
// same bytes: gen/harn's HypothesisAttestation, encoded).
func Success() jsontext.Value { return bytes.Clone(successDoc) }

// ErrInvalidResult is matched by CheckSuccess's errors.
var ErrInvalidResult = errors.New("native adapter returned an invalid " + Operation + " result")

// CheckSuccess reports whether result is the success document: the same
// members and values, in any order and spacing, and nothing else (gen/harn's
// HypothesisAttestation, closed at every level, with its two constants).
// Harn rejects missing, malformed and extended documents; a runtime written
// in Go does the same with this.
func CheckSuccess(result []byte) error {
	if err := json.Unmarshal(result, new(harn.HypothesisAttestation)); err != nil {
		if de, ok := errors.AsType[*wire.DecodeError](err); ok {
			err = de
		}
		return fmt.Errorf("%w: %w", ErrInvalidResult, err)
	}
	return nil
}

// AuthorityKind is the kind of authority the script requests (gen/harn's
// type; Known tells the four apart from anything else).
type AuthorityKind = harn.HypothesisAttestArgsAuthorityKind

// The authority kinds Harn sends.
const (
	PlanAdmission     = harn.HypothesisAttestArgsAuthorityKindPlanAdmission
	NativeApproval    = harn.HypothesisAttestArgsAuthorityKindNativeApproval
	NativeObservation = harn.HypothesisAttestArgsAuthorityKindNativeObservation
	LifecycleAudit    = harn.HypothesisAttestArgsAuthorityKindLifecycleAudit
)

// Binding is one attestation request: the args of hypothesis.attest_event,
// gen/harn's HypothesisAttestArgs (authority_kind, event_fingerprint and
// plan_fingerprint of the form sha256:<64 lowercase hex digits>,
// hypothesis_id, operation_receipt_id, and run_id, nil for null). A
// receipt is bound to one exact Binding.
type Binding = harn.HypothesisAttestArgs

// Equal reports whether a and b are the same request, member for member.
func Equal(a, b Binding) bool {
	if (a.RunID == nil) != (b.RunID == nil) || (a.RunID != nil && *a.RunID != *b.RunID) {
		return false
	}
	return a.AuthorityKind == b.AuthorityKind && a.EventFingerprint == b.EventFingerprint &&
		a.PlanFingerprint == b.PlanFingerprint && a.HypothesisID == b.HypothesisID &&
		a.OperationReceiptID == b.OperationReceiptID
}

// digest identifies b, member for member, as Equal compares it.
func digest(b Binding) [sha256.Size]byte {
	h := sha256.New()
	field := func(s string) {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	field(string(b.AuthorityKind))
	field(b.EventFingerprint)
	field(b.PlanFingerprint)
	field(b.HypothesisID)
	field(b.OperationReceiptID)
	if b.RunID != nil {
		h.Write([]byte{1})
		field(*b.RunID)
	} else {
		h.Write([]byte{0})
	}
	var d [sha256.Size]byte
	h.Sum(d[:0])
	return d
}

// Validate checks b as Harn does before it sends the request, which is
// what the schema says and the generated decoder checks: a known authority
// kind, fingerprints of the form sha256:<64 lowercase hex>, non-empty ids
// and a non-empty run id when there is one. Its error is an *Error with
// ReasonInvalidRequest.
func Validate(b Binding) error {
	args, err := json.Marshal(b)
	if err != nil {
		return invalid(b.OperationReceiptID, err)
	}
	_, err = ParseArgs(args)
	return err
}

func invalid(receipt string, err error) error {
	if de, ok := errors.AsType[*wire.DecodeError](err); ok {
		err = de
	}
	return &Error{Reason: ReasonInvalidRequest, ReceiptID: receipt, Detail: "args: " + err.Error()}
}

// ParseArgs reads the args of a hypothesis.attest_event call strictly, with
// gen/harn's decoder: an object with exactly the six members, strings where
// strings belong, run_id a string or null, every constraint of the schema.
// Its error is an *Error with ReasonInvalidRequest.
func ParseArgs(args []byte) (Binding, error) {
	var b Binding
	if err := json.Unmarshal(args, &b); err != nil {
		var receipt string
		if r := rpc.Member(args, "operation_receipt_id"); r.Kind() == '"' {
			_ = json.Unmarshal(r, &receipt)
		}
		return Binding{}, invalid(receipt, err)
	}
	return b, nil
}

// Reason classifies a failed attestation.
type Reason string

// The reasons an attestation fails.
const (
	// ReasonInvalidRequest: the args do not fit the contract.
	ReasonInvalidRequest Reason = "invalid_request"
	// ReasonDenied: the adapter refused (policy, a person, no authority).
	ReasonDenied Reason = "denied"
	// ReasonUnknownReceipt: no receipt of that id was issued, or it was
	// revoked or evicted.
	ReasonUnknownReceipt Reason = "unknown_receipt"
	// ReasonStaleReceipt: the receipt is older than Options.TTL.
	ReasonStaleReceipt Reason = "stale_receipt"
	// ReasonReceiptMismatch: the receipt does not match the completed
	// native operation (the VerifyFunc says so).
	ReasonReceiptMismatch Reason = "receipt_mismatch"
	// ReasonReceiptReused: the receipt is already bound to a request with
	// different bindings.
	ReasonReceiptReused Reason = "receipt_reused"
	// ReasonOperationFailed: the native operation, or its verification,
	// failed.
	ReasonOperationFailed Reason = "operation_failed"
)

// Code is the JSON-RPC code RPCError answers with for r.
func (r Reason) Code() int64 {
	switch r {
	case ReasonInvalidRequest:
		return rpc.CodeInvalidParams
	case ReasonOperationFailed:
		return -32000
	}
	return CodeRejected
}

// CodeRejected is the Harn bridge's "rejected by the host" code.
const CodeRejected = -32001

// Error is a failed attestation.
type Error struct {
	Reason Reason
	// ReceiptID is the request's operation_receipt_id, when known.
	ReceiptID string
	// Detail says what went wrong, for people.
	Detail string
	// Err is an underlying cause (a VerifyFunc's error), if any.
	Err error
}

// Sentinels for errors.Is; each matches every *Error with its Reason.
var (
	ErrInvalidRequest  = &Error{Reason: ReasonInvalidRequest}
	ErrDenied          = &Error{Reason: ReasonDenied}
	ErrUnknownReceipt  = &Error{Reason: ReasonUnknownReceipt}
	ErrStaleReceipt    = &Error{Reason: ReasonStaleReceipt}
	ErrReceiptMismatch = &Error{Reason: ReasonReceiptMismatch}
	ErrReceiptReused   = &Error{Reason: ReasonReceiptReused}
	ErrOperationFailed = &Error{Reason: ReasonOperationFailed}
)

// Errorf returns an *Error with reason r, for a VerifyFunc to return.
func Errorf(r Reason, format string, args ...any) *Error {
	return &Error{Reason: r, Detail: fmt.Sprintf(format, args...)}
}

func (e *Error) Error() string {
	s := Operation + ": " + string(e.Reason)
	if e.Detail != "" {
		s += ": " + e.Detail
	} else if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Is matches a sentinel (or any *Error) with the same Reason.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Reason == e.Reason
}

// Unwrap returns the underlying cause.
func (e *Error) Unwrap() error { return e.Err }

// RPCError is the JSON-RPC error to answer the host/call with (see the
// package documentation for codes and data).
func (e *Error) RPCError() *rpc.Error {
	data := struct {
		Reason    Reason `json:"reason"`
		ReceiptID string `json:"operation_receipt_id,omitempty"`
	}{e.Reason, rpc.Truncate(e.ReceiptID, rpc.MaxEcho)}
	return rpc.NewError(e.Reason.Code(), rpc.Truncate(e.Error(), 4*rpc.MaxEcho), data)
}

// VerifyFunc checks a request against the completed native operation its
// receipt names, before the receipt is bound. It returns nil to attest, an
// *Error (made with Errorf) to refuse with that reason, or any other error,
// which counts as ReasonOperationFailed. An Attestor calls it at most once
// per successful binding: exact retries are answered from the binding.
type VerifyFunc func(ctx context.Context, b Binding) error

// DefaultMaxReceipts is how many receipts an Attestor holds unless
// Options.MaxReceipts says otherwise.
const DefaultMaxReceipts = 4096

// Options configures an Attestor. The zero value is ready to use.
type Options struct {
	// Verify checks each request before its receipt is bound; nil attests
	// every valid request whose receipt was issued and is unbound.
	Verify VerifyFunc
	// MaxReceipts bounds the receipts held; issuing one more forgets the
	// oldest, which then fails as unknown. Zero means DefaultMaxReceipts.
	MaxReceipts int
	// TTL, when positive, is how long a receipt stays usable after Issue;
	// later requests, exact retries included, fail as stale.
	TTL time.Duration
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// ErrAlreadyIssued is returned by Issue for a receipt id it already holds.
var ErrAlreadyIssued = errors.New("attest: receipt already issued")

// Attestor issues receipts and binds each to one exact request.
type Attestor struct {
	opts Options

	mu       sync.Mutex
	receipts map[string]*list.Element // of *receipt, oldest first in order
	order    list.List
}

type receipt struct {
	id     string
	issued time.Time
	// bound is the digest of the request the receipt is bound to (its
	// hypothesis and run ids are the peer's, of any length), nil while
	// unbound.
	bound *[sha256.Size]byte
	// busy is closed when a verification in flight ends.
	busy chan struct{}
}

// New returns an Attestor.
func New(opts *Options) *Attestor {
	a := &Attestor{receipts: map[string]*list.Element{}}
	if opts != nil {
		a.opts = *opts
	}
	if a.opts.MaxReceipts <= 0 {
		a.opts.MaxReceipts = DefaultMaxReceipts
	}
	if a.opts.Now == nil {
		a.opts.Now = time.Now
	}
	return a
}

// Issue records the receipt of a completed native operation; requests may
// then bind it. It fails for an empty id or one already held.
func (a *Attestor) Issue(receiptID string) error {
	if receiptID == "" {
		return errors.New("attest: empty receipt id")
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	now := a.opts.Now()
	a.expire(now)
	if _, ok := a.receipts[receiptID]; ok {
		return ErrAlreadyIssued
	}
	for a.order.Len() >= a.opts.MaxReceipts {
		a.remove(a.order.Front())
	}
	a.receipts[receiptID] = a.order.PushBack(&receipt{id: receiptID, issued: now})
	return nil
}

// Revoke forgets a receipt (the native operation was undone, say); later
// requests naming it fail as unknown. It reports whether it was held.
func (a *Attestor) Revoke(receiptID string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	e, ok := a.receipts[receiptID]
	if ok {
		a.remove(e)
	}
	return ok
}

// Len returns how many receipts are held.
func (a *Attestor) Len() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.expire(a.opts.Now())
	return a.order.Len()
}

func (a *Attestor) remove(e *list.Element) {
	delete(a.receipts, e.Value.(*receipt).id)
	a.order.Remove(e)
}

// expire drops receipts older than TTL (they are oldest first).
func (a *Attestor) expire(now time.Time) {
	if a.opts.TTL <= 0 {
		return
	}
	for e := a.order.Front(); e != nil && a.stale(e.Value.(*receipt), now); e = a.order.Front() {
		a.remove(e)
	}
}

func (a *Attestor) stale(r *receipt, now time.Time) bool {
	return a.opts.TTL > 0 && now.Sub(r.issued) > a.opts.TTL
}

// Attest answers one request: the success document, or an *Error. The
// first valid request for an issued receipt is verified and binds it; an
// exact retry returns the same success without verifying again; any other
// request naming a bound receipt fails with ReasonReceiptReused. A request
// that arrives while the receipt's first request is being verified waits for
// that outcome (or for ctx, whose error it then returns).
func (a *Attestor) Attest(ctx context.Context, b Binding) (jsontext.Value, error) {
	if err := Validate(b); err != nil {
		return nil, err
	}
	id := b.OperationReceiptID
	fail := func(r Reason, detail string, cause error) error {
		return &Error{Reason: r, ReceiptID: id, Detail: detail, Err: cause}
	}
	for {
		a.mu.Lock()
		e, ok := a.receipts[id]
		if !ok {
			a.mu.Unlock()
			return nil, fail(ReasonUnknownReceipt, "no such operation receipt", nil)
		}
		r := e.Value.(*receipt)
		if a.stale(r, a.opts.Now()) {
			a.remove(e)
			a.mu.Unlock()
			return nil, fail(ReasonStaleReceipt, "the operation receipt has expired", nil)
		}
		if r.bound != nil {
			same := *r.bound == digest(b)
			a.mu.Unlock()
			if same {
				return Success(), nil
			}
			return nil, fail(ReasonReceiptReused, "the operation receipt is bound to a different request", nil)
		}
		if busy := r.busy; busy != nil {
			a.mu.Unlock()
			select {
			case <-busy:
				continue
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		r.busy = make(chan struct{})
		a.mu.Unlock()

		err := a.verify(ctx, b)

		a.mu.Lock()
		close(r.busy)
		r.busy = nil
		if err == nil {
			d := digest(b)
			r.bound = &d
		}
		a.mu.Unlock()
		if err == nil {
			return Success(), nil
		}
		if e, ok := errors.AsType[*Error](err); ok {
			c := *e
			c.ReceiptID = id
			return nil, &c
		}
		if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
			return nil, err
		}
		return nil, fail(ReasonOperationFailed, err.Error(), err)
	}
}

func (a *Attestor) verify(ctx context.Context, b Binding) (err error) {
	if a.opts.Verify == nil {
		return nil
	}
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("verification panicked: %v", v)
		}
	}()
	return a.opts.Verify(ctx, b)
}

// Register installs a as the host's trusted adapter: it sets
// h.HypothesisAttestEvent to a.Handle, so that the operation is served and,
// by servers/host, advertised in host/capabilities (hypothesis:
// [attest_event]) exactly while it is set.
func (a *Attestor) Register(h *harn.HostHandlers) { h.HypothesisAttestEvent = a.Handle }

// Handle serves the typed hypothesis.attest_event operation; it has the
// type of harn.HostHandlers.HypothesisAttestEvent, whose generated decoder
// has already read args strictly (an invalid request is answered -32602
// before Handle runs). It answers with the success document or with
// Error.RPCError; a context error is returned as is.
func (a *Attestor) Handle(ctx context.Context, _ *harn.HostCallParams, args *harn.HypothesisAttestArgs) (*harn.HypothesisAttestation, error) {
	if args == nil {
		return nil, (&Error{Reason: ReasonInvalidRequest, Detail: "args: missing"}).RPCError()
	}
	if _, err := a.Attest(ctx, *args); err != nil {
		if e, ok := errors.AsType[*Error](err); ok {
			return nil, fmt.Errorf("%w: %w", e, e.RPCError())
		}
		return nil, err
	}
	return &harn.HypothesisAttestation{}, nil
}

// HandleArgs serves one hypothesis.attest_event call from its raw args (the
// host/call params' args member): the success document, or an *rpc.Error
// from Error.RPCError. A context error is returned as is, for the engine to
// answer as a cancelled request.
func (a *Attestor) HandleArgs(ctx context.Context, args jsontext.Value) (jsontext.Value, error) {
	b, err := ParseArgs(args)
	if err == nil {
		var doc jsontext.Value
		if doc, err = a.Attest(ctx, b); err == nil {
			return doc, nil
		}
	}
	if e, ok := errors.AsType[*Error](err); ok {
		return nil, e.RPCError()
	}
	return nil, err
}
