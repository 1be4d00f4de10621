// Package service serves one role of AgentPM's process-service protocol
// (agentpm-service v1): it is what a configured `type: "process"` provider
// (model, embedding, hook, knowledge, memory or approval) runs, speaking
// NDJSON envelopes on its stdin and stdout while the Harness (or
// clients/service) drives it.
//
// A provider is an agentpmservice.ServiceHandlers with the fields of its
// role's methods set. The Server adds what every provider must get right
// and handlers should not have to repeat:
//
//   - the handshake: it refuses an initialize for another role (a typed
//     unsupported_capability error) or another protocol version
//     (protocol_error), and answers the right one with the role, the
//     protocol version, the requested registry id and the live capabilities
//     (derived from the fields that are set: the hooks served, whether
//     lifecycle commits and operation state are served, ...), plus what the
//     role's Initialize field adds (embedding spaces, knowledge modes and
//     package attestations, the memory descriptor). An advertisement that
//     would claim something unserved is corrected, and a service that cannot
//     work as configured answers ready false, never a claim of readiness;
//   - requests before a successful handshake are refused (protocol_error);
//   - a method of another role, or one no field serves, is answered with a
//     typed unsupported_capability error frame, with retryable false;
//   - handler errors become typed error frames: an *rpc.Error (see Errorf)
//     keeps its code, message and retryable flag; any other error is an
//     internal_error carrying its text.
//
// Usage, for a knowledge provider:
//
//	h := &agentpmservice.ServiceHandlers{
//		InitializeKnowledge: func(ctx context.Context, p *agentpmservice.KnowledgeInitialize) (*agentpmservice.KnowledgeReadiness, error) {
//			return &agentpmservice.KnowledgeReadiness{Modes: []string{"vector_query"}}, nil
//		},
//		Retrieve: retrieve,
//	}
//	srv, err := service.New(agentpmservice.ServiceRoleKnowledge, h, nil)
//	...
//	err = srv.Serve(ctx, os.Stdin, os.Stdout)
//
// Serve returns nil at the end of its input, once every request read has
// been answered, and ctx's error at once when ctx ends (a provider stops on
// SIGTERM by cancelling it; the Harness itself simply kills providers).
// Diagnostics go to Options.Conn.Logger, never to the protocol stream.
package service

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync/atomic"

	"github.com/go-json-experiment/json"

	"github.com/bridgekit/bridgekit/gen/agentpmservice"
	"github.com/bridgekit/bridgekit/internal/serve"
	"github.com/bridgekit/bridgekit/runtime/rpc"
)

// ProtocolVersion is the agentpm-service version this package speaks.
const ProtocolVersion = 1

// methodInitialize is every role's handshake method.
const methodInitialize = agentpmservice.MethodInitializeModel

// Errors of New. Each error New returns matches one of them.
var (
	// ErrUnknownRole: the role is not one of agentpm-service's six.
	ErrUnknownRole = errors.New("service: unknown role")
	// ErrOtherRole: fields of another role's methods are set; a provider
	// process serves one role.
	ErrOtherRole = errors.New("service: handlers of another role are set")
	// ErrIncomplete: a method the role cannot do without is not served, or
	// the role's Initialize field, which gives the advertisement only the
	// provider knows (embedding spaces, knowledge modes, the memory
	// descriptor), is not set.
	ErrIncomplete = errors.New("service: the role is not fully served")
)

// Options configures a Server. The zero value is ready to use.
type Options struct {
	// Conn configures each connection (frame and queue limits, request
	// timeout, logger, and Middleware wrapping everything served, the
	// handshake included: runtime/middleware's Logging and Recover). Requests are handled one at a time unless
	// Conn.MaxConcurrentRequests says otherwise, as the Harness sends them.
	Conn rpc.Options
}

// Server serves one role with one set of handlers, on any number of
// connections; each connection has its own handshake.
type Server struct {
	role agentpmservice.ServiceRole
	h    agentpmservice.ServiceHandlers // as served: the initialize field wrapped
	opts Options
}

// roleSpec is what a role needs served.
type roleSpec struct {
	// methods that must be served (wire names); for hook, one hook id or
	// invoke.
	required []string
	// needsInit: the role's advertisement needs the provider's Initialize.
	needsInit bool
}

var roles = map[agentpmservice.ServiceRole]roleSpec{
	agentpmservice.ServiceRoleModel:     {required: []string{agentpmservice.MethodGenerate}},
	agentpmservice.ServiceRoleEmbedding: {required: []string{agentpmservice.MethodEmbed}, needsInit: true},
	agentpmservice.ServiceRoleHook:      {},
	agentpmservice.ServiceRoleKnowledge: {required: []string{agentpmservice.MethodRetrieve}, needsInit: true},
	agentpmservice.ServiceRoleMemory: {required: []string{agentpmservice.MethodMemoryRead, agentpmservice.MethodMemoryWrite},
		needsInit: true},
	agentpmservice.ServiceRoleApproval: {required: []string{agentpmservice.MethodRequestApproval}},
}

// New returns a Server for role that serves a copy of h. It checks that h
// serves that role only, with the methods the role cannot do without
// (model: generate; embedding: embed; hook: at least one hook id or invoke;
// knowledge: retrieve; memory: read and write; approval: request_approval)
// and, for embedding, knowledge and memory, the role's Initialize field. A
// hook service whose Invoke is unset answers invoke from its hook-id fields
// (agentpmservice.InvokeHooks).
func New(role agentpmservice.ServiceRole, h *agentpmservice.ServiceHandlers, opts *Options) (*Server, error) {
	spec, ok := roles[role]
	if !ok {
		return nil, fmt.Errorf("%w %q", ErrUnknownRole, role)
	}
	s := &Server{role: role, h: *h}
	if opts != nil {
		s.opts = *opts
	}
	served := map[string]bool{}
	for _, m := range s.h.Served() {
		if m.Qualifier != string(role) {
			return nil, fmt.Errorf("%w: %s (%s) is set on a %s service", ErrOtherRole, m.Go, m.Qualifier, role)
		}
		served[m.Wire] = true
	}
	for _, m := range spec.required {
		if !served[m] {
			return nil, fmt.Errorf("%w: a %s service must serve %s", ErrIncomplete, role, m)
		}
	}
	if spec.needsInit && !served[methodInitialize] {
		return nil, fmt.Errorf("%w: a %s service must set its Initialize field to advertise %s", ErrIncomplete, role, advertised[role])
	}
	if role == agentpmservice.ServiceRoleHook {
		if len(s.h.Hooks()) == 0 && s.h.Invoke == nil {
			return nil, fmt.Errorf("%w: a hook service must serve at least one hook id (or invoke)", ErrIncomplete)
		}
		if s.h.Invoke == nil {
			s.h.Invoke = agentpmservice.InvokeHooks(&s.h)
		}
	}
	s.wrapInitialize()
	return s, nil
}

// advertised names what each role's Initialize must advertise.
var advertised = map[agentpmservice.ServiceRole]string{
	agentpmservice.ServiceRoleEmbedding: "its embedding spaces",
	agentpmservice.ServiceRoleKnowledge: "its modes and package attestations",
	agentpmservice.ServiceRoleMemory:    "its memory descriptor and package attestations",
}

// Role returns the role the server serves.
func (s *Server) Role() agentpmservice.ServiceRole { return s.role }

// Methods lists the wire names of the methods served, in catalogue order,
// initialize first: the live capability set.
func (s *Server) Methods() []string {
	var out []string
	for _, m := range s.h.Served() {
		if !slices.Contains(out, m.Wire) {
			out = append(out, m.Wire)
		}
	}
	return out
}

// Handler returns an rpc.Handler for one connection, with a handshake of
// its own, for use with rpc.NewConn and agentpmservice.NewCodec.
func (s *Server) Handler() rpc.Handler { return &session{s: s} }

// Connect starts serving on r and w and returns the connection at once.
func (s *Server) Connect(r io.Reader, w io.Writer) *rpc.Conn {
	codec := agentpmservice.NewCodec("", string(s.role))
	return rpc.NewConn(r, w, codec, s.Handler(), agentpmservice.ConnOptions(&s.opts.Conn))
}

// Serve serves on r and w until the peer ends its input, returning nil once
// every request read has been answered, or until ctx ends, returning ctx's
// error at once. A failed write (a closed stdout) ends it with that error.
// The connection is closed before Serve returns.
func (s *Server) Serve(ctx context.Context, r io.Reader, w io.Writer) error {
	return serve.Until(ctx, s.Connect(r, w))
}

// session is one connection's handler: it holds the handshake's state.
type session struct {
	s           *Server
	initialized atomic.Bool
}

// Handle implements rpc.Handler.
func (x *session) Handle(ctx context.Context, req *rpc.Request) (any, error) {
	s := x.s
	if req.Kind == rpc.KindNotification {
		return nil, nil // the Harness sends no events; nothing to answer
	}
	if req.Qualifier != string(s.role) {
		return nil, s.otherRole(req.Method, req.Qualifier)
	}
	if req.Method == methodInitialize {
		if err := s.checkHandshake(req.Params); err != nil {
			return nil, err
		}
		res, err := s.h.Handle(ctx, req)
		if err == nil {
			x.initialized.Store(true)
		}
		return res, err
	}
	if !x.initialized.Load() {
		return nil, &rpc.Error{Code: rpc.CodeInvalidRequest,
			Message: fmt.Sprintf("%s before initialize: the %s service has not completed its handshake", rpc.Truncate(req.Method, rpc.MaxEcho), s.role)}
	}
	return s.h.Handle(ctx, req)
}

// otherRole is the unsupported-capability error for a request of another
// role (or none).
func (s *Server) otherRole(method, role string) *rpc.Error {
	what := "names no service role"
	if role != "" {
		what = "is for the " + rpc.Truncate(role, rpc.MaxEcho) + " role"
	}
	return &rpc.Error{Code: rpc.CodeMethodNotFound, Name: agentpmservice.ErrUnsupportedCapability.Name,
		Message: fmt.Sprintf("unsupported capability: %s %s; this service serves the %s role only", rpc.Truncate(method, rpc.MaxEcho), what, s.role)}
}

// checkHandshake refuses an initialize payload that names another role or
// protocol version, before its typed decode.
func (s *Server) checkHandshake(params []byte) error {
	var role string
	if raw := rpc.Member(params, "role"); raw != nil && json.Unmarshal(raw, &role) == nil && role != string(s.role) {
		return &rpc.Error{Code: rpc.CodeMethodNotFound, Name: agentpmservice.ErrUnsupportedCapability.Name,
			Message: fmt.Sprintf("unsupported capability: initialize asks for the %s role; this service serves the %s role", rpc.Truncate(role, rpc.MaxEcho), s.role)}
	}
	var version float64 // 1.0 is 1, as in JSON Schema
	if raw := rpc.Member(params, "protocol_version"); raw != nil && (json.Unmarshal(raw, &version) != nil || version != ProtocolVersion) {
		return &rpc.Error{Code: rpc.CodeInvalidRequest,
			Message: fmt.Sprintf("unsupported protocol_version %s; this service speaks agentpm-service %d", rpc.Truncate(string(raw), rpc.MaxEcho), ProtocolVersion)}
	}
	return nil
}

// Errorf returns the error a handler returns to answer with an error frame
// of the given code, message and retryable flag. code is a string code of
// the protocol (agentpmservice.ErrServiceError.Name, "request_failed", ...);
// errors.Is matches the agentpmservice sentinel with that code.
//
// Domain failures of knowledge and memory (an unknown document, a record not
// found) are not error frames: they belong inside an ok:false result, which
// the Harness hands to the model, whereas an error frame counts as a service
// failure and applies the restart policy.
func Errorf(code string, retryable bool, format string, args ...any) *rpc.Error {
	return &rpc.Error{Name: code, Message: fmt.Sprintf(format, args...), Retryable: &retryable}
}
