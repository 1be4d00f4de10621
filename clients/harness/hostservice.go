package harness

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/bridgekit/bridgekit/gen/agentpmmachine"
	"github.com/bridgekit/bridgekit/gen/agentpmservice"
	"github.com/bridgekit/bridgekit/runtime/rpc"
	"github.com/bridgekit/bridgekit/runtime/wire"
)

// DefaultRequestTimeout is how long the Harness waits for a host service
// whose registration gives no timeout (its request_timeout_ms default).
const DefaultRequestTimeout = 120 * time.Second

// HandlerTimeout is the deadline a host-service handler runs under when
// the Harness waits registered for it: a little less (a tenth, at most 2
// s), so that a slow handler is answered with host_service_callback_failed
// while the Harness still waits, instead of stalling the Run until the
// Harness gives up and then receiving a late answer it rejects.
func HandlerTimeout(registered time.Duration) time.Duration {
	if registered <= 0 {
		registered = DefaultRequestTimeout
	}
	return registered - min(registered/10, 2*time.Second)
}

// HostService is a host service the client serves: the Harness sends it
// host_service requests for Role and RegistryID, which Handlers answers.
// Handlers are agentpm-service's role handlers, the same functions a
// process provider serves (package agentpmservice: Generate, Embed,
// Retrieve, Memory*, the hooks by hook id, RequestApproval), so one
// implementation serves both transports.
type HostService struct {
	Role       agentpmservice.ServiceRole
	RegistryID string
	Handlers   *agentpmservice.ServiceHandlers
	// Capabilities is the role's capability advertisement (the same as a
	// process service's handshake result, e.g. an
	// *agentpmservice.KnowledgeReadiness), sent as register_host_service's
	// capabilities; nil sends none.
	Capabilities any
	// Hooks are the hook ids a hook service serves; nil uses
	// Handlers.Hooks().
	Hooks []agentpmservice.HookID
	// Timeout is the Harness's timeout for each call: sent as
	// request_timeout_ms when set (the Harness uses it for SDK hook
	// registrations; configured services take their configuration's,
	// which Timeout should then repeat). 0 means DefaultRequestTimeout,
	// not sent. Handlers run under HandlerTimeout(Timeout).
	Timeout time.Duration
}

type serviceKey struct{ role, id string }

// hostService is a registered HostService.
type hostService struct {
	HostService
	deadline time.Duration
}

// RegisterHostService registers s with the Harness (register_host_service)
// and serves its host_service requests from then on. Register after
// Initialize and before StartRun; registering a role and registry id again
// replaces the handlers and the capabilities. A registration the Harness
// refuses (host_registration_failed) leaves the previous one in place.
func (c *Client) RegisterHostService(ctx context.Context, s HostService) (*agentpmmachine.RegisterHostServiceResult, error) {
	switch {
	case s.RegistryID == "":
		return nil, errors.New("harness: register_host_service: no registry id")
	case s.Handlers == nil:
		return nil, fmt.Errorf("harness: register_host_service %s/%s: no handlers", s.Role, s.RegistryID)
	}
	id := s.RegistryID
	p := &agentpmmachine.RegisterHostServiceParams{Role: s.Role, RegistryID: &id, Hooks: s.Hooks}
	if s.Role == agentpmservice.ServiceRoleHook && p.Hooks == nil {
		p.Hooks = s.Handlers.Hooks()
	}
	if s.Capabilities != nil {
		raw, err := json.Marshal(s.Capabilities, wire.Fidelity)
		if err != nil {
			return nil, fmt.Errorf("harness: register_host_service %s/%s: capabilities: %w", s.Role, s.RegistryID, err)
		}
		p.Capabilities = raw
	}
	if s.Timeout > 0 {
		ms := s.Timeout.Milliseconds()
		p.RequestTimeoutMS = &ms
	}
	// Served before the Harness hears of it, so that no call finds it
	// missing.
	k := serviceKey{string(s.Role), s.RegistryID}
	c.mu.Lock()
	prev := c.services[k]
	c.services[k] = &hostService{HostService: s, deadline: HandlerTimeout(s.Timeout)}
	c.mu.Unlock()
	res, err := c.peer.RegisterHostService(ctx, p)
	if err != nil {
		c.mu.Lock()
		if prev != nil {
			c.services[k] = prev
		} else {
			delete(c.services, k)
		}
		c.mu.Unlock()
		return nil, c.callErr(agentpmmachine.MethodRegisterHostService, err)
	}
	return res, nil
}

// Unregistered returns the services of required (initialize's
// required_host_services) that are not registered with this client.
func (c *Client) Unregistered(required []agentpmmachine.HostServiceRegistration) []agentpmmachine.HostServiceRegistration {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []agentpmmachine.HostServiceRegistration
	for _, r := range required {
		if _, ok := c.services[serviceKey{string(r.Role), r.RegistryID}]; !ok {
			out = append(out, r)
		}
	}
	return out
}

func hostErr(code *rpc.Error, format string, args ...any) *rpc.Error {
	return &rpc.Error{Name: code.Name, Message: fmt.Sprintf(format, args...)}
}

// serveHostService answers a host_service request with the registered
// handlers of its role and registry id, under their deadline.
func (c *Client) serveHostService(ctx context.Context, req *rpc.Request) (any, error) {
	var p agentpmmachine.HostServiceParams
	if err := rpc.DecodeParams(req.Params, &p); err != nil {
		return nil, hostErr(agentpmmachine.ErrHostServiceBadRequest, "host_service request: %v", err)
	}
	c.mu.Lock()
	s := c.services[serviceKey{p.Role, p.RegistryID}]
	runCtx := c.runCtx
	c.mu.Unlock()
	what := rpc.Truncate(p.Role, rpc.MaxEcho) + "/" + rpc.Truncate(p.RegistryID, rpc.MaxEcho)
	if s == nil {
		return nil, hostErr(agentpmmachine.ErrHostServiceNotRegistered, "host service %s is not registered with this client", what)
	}
	hctx, cancel := context.WithTimeout(ctx, s.deadline)
	defer cancel()
	if runCtx != nil {
		// The Harness stops waiting when the Run is cancelled.
		stop := context.AfterFunc(runCtx, cancel)
		defer stop()
	}
	type answer struct {
		res any
		err error
	}
	// The handler runs apart, so that the deadline is kept even by a
	// handler that ignores its context.
	ch := make(chan answer, 1)
	sub := &rpc.Request{Kind: rpc.KindRequest, ID: req.ID, Method: p.Method, Qualifier: p.Role, Params: bytes.Clone(p.Payload)}
	go func() {
		defer func() {
			if v := recover(); v != nil {
				c.log.Error("harness: host service handler panicked", "service", what, "method", p.Method, "panic", v)
				ch <- answer{err: fmt.Errorf("handler panicked: %v", v)}
			}
		}()
		res, err := s.Handlers.Handle(hctx, sub)
		ch <- answer{res, err}
	}()
	var a answer
	select {
	case a = <-ch:
	case <-hctx.Done():
		a.err = hctx.Err()
	}
	method := rpc.Truncate(p.Method, rpc.MaxEcho)
	switch {
	case a.err == nil:
		raw, err := json.Marshal(a.res, wire.Fidelity)
		if err != nil {
			return nil, hostErr(agentpmmachine.ErrHostServiceCallbackFailed, "host service %s %s: cannot encode the answer: %v", what, method, err)
		}
		if string(raw) == "null" {
			raw = jsontext.Value(`{}`)
		}
		return jsontext.Value(raw), nil
	case errors.Is(a.err, context.DeadlineExceeded) && hctx.Err() != nil && ctx.Err() == nil:
		return nil, hostErr(agentpmmachine.ErrHostServiceCallbackFailed, "host service %s %s: the handler did not answer within %v (the Harness waits %v)", what, method, s.deadline, registered(s.Timeout))
	case hctx.Err() != nil && ctx.Err() == nil:
		return nil, hostErr(agentpmmachine.ErrHostServiceCallbackFailed, "host service %s %s: the Run was cancelled", what, method)
	case errors.Is(a.err, rpc.ErrMethodNotFound):
		return nil, hostErr(agentpmmachine.ErrHostServiceNotRegistered, "host service %s does not serve %s", what, method)
	case errors.Is(a.err, rpc.ErrInvalidParams):
		return nil, hostErr(agentpmmachine.ErrHostServiceBadRequest, "host service %s %s: %v", what, method, a.err)
	}
	if e, ok := errors.AsType[*rpc.Error](a.err); ok && e.Name != "" {
		return nil, e
	}
	return nil, hostErr(agentpmmachine.ErrHostServiceCallbackFailed, "host service %s %s: %v", what, method, a.err)
}

func registered(d time.Duration) time.Duration {
	if d <= 0 {
		return DefaultRequestTimeout
	}
	return d
}
