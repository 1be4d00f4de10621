package service

// The handshake: its payload, the secret check, and what the client
// requires of the provider's answer (service.md §3).

import (
	"context"
	"errors"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/bridgekit/bridgekit/gen/agentpmservice"
	"github.com/bridgekit/bridgekit/runtime/envelope"
	"github.com/bridgekit/bridgekit/runtime/redact"
	"github.com/bridgekit/bridgekit/runtime/rpc"
	"github.com/bridgekit/bridgekit/runtime/wire"
)

// handshakeTypes are the handshake payload types of each role.
var handshakeTypes = map[agentpmservice.ServiceRole]reflect.Type{
	agentpmservice.ServiceRoleModel:     reflect.TypeFor[*agentpmservice.ModelInitialize](),
	agentpmservice.ServiceRoleEmbedding: reflect.TypeFor[*agentpmservice.EmbeddingInitialize](),
	agentpmservice.ServiceRoleHook:      reflect.TypeFor[*agentpmservice.HookInitialize](),
	agentpmservice.ServiceRoleKnowledge: reflect.TypeFor[*agentpmservice.KnowledgeInitialize](),
	agentpmservice.ServiceRoleMemory:    reflect.TypeFor[*agentpmservice.MemoryInitialize](),
	agentpmservice.ServiceRoleApproval:  reflect.TypeFor[*agentpmservice.ApprovalInitialize](),
}

// handshakePayload encodes the handshake payload: the role data of
// Config.Initialize (a copy, with the registry id and session set), or the
// role's empty one.
func (c *Client) handshakePayload() (jsontext.Value, error) {
	cfg := &c.cfg
	in := cfg.Initialize
	if in == nil {
		in = reflect.New(handshakeTypes[cfg.Role].Elem()).Interface()
	} else if t := reflect.TypeOf(in); t != handshakeTypes[cfg.Role] || reflect.ValueOf(in).IsNil() {
		return nil, fmt.Errorf("%w: Initialize of a %s provider must be a non-nil %v, not %v", ErrConfig, cfg.Role, handshakeTypes[cfg.Role], t)
	}
	// A copy: the caller's value is not changed.
	v := reflect.New(handshakeTypes[cfg.Role].Elem())
	v.Elem().Set(reflect.ValueOf(in).Elem())
	v.Elem().FieldByName("RegistryID").SetString(cfg.RegistryID)
	extra := v.Elem().FieldByName("Extra").Addr().Interface().(*wire.Extras)
	*extra = slices.Clone(*extra)
	if cfg.Session != nil {
		raw, err := json.Marshal(cfg.Session)
		if err != nil {
			return nil, fmt.Errorf("%w: session: %w", ErrConfig, err)
		}
		extra.Set("session", raw)
	}
	// The role data lists are required members: absent ones are empty.
	for _, name := range []string{"Packages", "Spaces", "Hooks"} {
		if f := v.Elem().FieldByName(name); f.IsValid() && f.IsNil() {
			f.Set(reflect.MakeSlice(f.Type(), 0, 0))
		}
	}
	raw, err := json.Marshal(v.Interface(), wire.Fidelity)
	if err != nil {
		return nil, fmt.Errorf("%w: Initialize: %w", ErrConfig, err)
	}
	return raw, nil
}

// minSecretLen is the shortest value checked: shorter ones ("1", "true")
// appear in payloads by chance.
const minSecretLen = 8

// redactor masks what the provider writes, in every error and log line
// that quotes it: the values of the variables passed to it (Config.Env
// and Config.SetEnv, and secret-looking ones of its environment) and
// token shapes.
func (c *Client) redactor() *redact.Redactor { return c.redact }

// unsafeMetadata refuses a handshake payload with a string that contains
// the value of a secret environment variable of this process or of the
// provider's Config.SetEnv.
func (c *Client) unsafeMetadata() error {
	var secrets [][2]string
	for _, kv := range slices.Concat(os.Environ(), c.cfg.SetEnv) {
		name, value, _ := strings.Cut(kv, "=")
		if len(value) >= minSecretLen && redact.EnvName(name) {
			secrets = append(secrets, [2]string{name, value})
		}
	}
	if len(secrets) == 0 {
		return nil
	}
	dec := jsontext.NewDecoder(strings.NewReader(string(c.payload)))
	for {
		tok, err := dec.ReadToken()
		if err != nil {
			return nil // the end of the payload, which Marshal wrote
		}
		if tok.Kind() != '"' {
			continue
		}
		s := tok.String()
		for _, sec := range secrets {
			if strings.Contains(s, sec[1]) {
				return c.unavailable(ReasonUnsafeMetadata, fmt.Sprintf("the handshake payload carries the value of the environment variable %s at %s; pass secrets through Config.Env", sec[0], dec.StackPointer()), nil)
			}
		}
	}
}

// handshake sends the handshake on p and checks the answer.
func (c *Client) handshake(ctx context.Context, p *proc) (*Preflight, error) {
	hctx, cancel := context.WithTimeout(ctx, c.cfg.StartupTimeout)
	defer cancel()
	var raw jsontext.Value
	_, err := p.send(hctx, rpc.Outbound{Method: agentpmservice.MethodInitializeModel, Qualifier: string(c.cfg.Role), Params: c.payload}, &raw)
	if err != nil {
		return nil, c.handshakeErr(ctx, hctx, p, err)
	}
	return c.check(raw)
}

// handshakeErr classifies a failed handshake.
func (c *Client) handshakeErr(ctx, hctx context.Context, p *proc, err error) error {
	var rerr *rpc.Error
	switch {
	case errors.Is(err, envelope.ErrProtocol):
		return c.unavailable(ReasonProtocol, err.Error(), err)
	case errors.Is(err, envelope.ErrVersion):
		return c.unavailable(ReasonVersion, err.Error(), err)
	case errors.Is(err, ErrWrongRole):
		return c.unavailable(ReasonRole, err.Error(), err)
	case ctx.Err() != nil:
		return c.unavailable(ReasonHandshake, "the handshake was abandoned: "+ctx.Err().Error(), err)
	case hctx.Err() != nil:
		return c.unavailable(ReasonTimeout, fmt.Sprintf("no answer to initialize within %v", c.cfg.StartupTimeout), err)
	case errors.Is(err, rpc.ErrClosed):
		<-p.exited
		state := "its output ended"
		if p.state != nil {
			state = p.state.String()
		}
		return c.unavailable(ReasonExited, "the provider exited during the handshake ("+state+")", err)
	case errors.As(err, &rerr) && errors.Is(err, rpc.ErrMethodNotFound):
		return c.unavailable(ReasonRole, "the provider does not serve the "+string(c.cfg.Role)+" role: "+rerr.Message, err)
	case errors.As(err, &rerr) && rerr.Code == rpc.CodeInvalidRequest && strings.Contains(rerr.Message, "protocol_version"):
		return c.unavailable(ReasonVersion, "the provider refused the protocol version: "+rerr.Message, err)
	}
	return c.unavailable(ReasonHandshake, err.Error(), err)
}

// check applies the checks of service.md §3 to the handshake's answer.
func (c *Client) check(raw jsontext.Value) (*Preflight, error) {
	cfg := &c.cfg
	pf := &Preflight{Role: cfg.Role, RegistryID: cfg.RegistryID, Readiness: raw}
	var head struct {
		RegistryID      *string  `json:"registry_id"`
		Ready           *bool    `json:"ready"`
		Role            *string  `json:"role"`
		ProtocolVersion *float64 `json:"protocol_version"` // 1.0 is 1, as in JSON Schema
	}
	if raw.Kind() != '{' || json.Unmarshal(raw, &head) != nil {
		return nil, c.unavailable(ReasonHandshake, "the readiness is not an object of the protocol's shape: "+rpc.Truncate(string(raw), rpc.MaxEcho), nil)
	}
	switch {
	case head.Role != nil && *head.Role != string(cfg.Role):
		return nil, c.unavailable(ReasonRole, fmt.Sprintf("the provider reports the role %q", rpc.Truncate(*head.Role, rpc.MaxEcho)), nil)
	case head.ProtocolVersion != nil && *head.ProtocolVersion != 1:
		return nil, c.unavailable(ReasonVersion, fmt.Sprintf("the provider reports protocol version %g", *head.ProtocolVersion), nil)
	case head.RegistryID != nil && *head.RegistryID != cfg.RegistryID && cfg.Role != agentpmservice.ServiceRoleEmbedding:
		return nil, c.unavailable(ReasonRegistry, fmt.Sprintf("the provider reports registry id %q", rpc.Truncate(*head.RegistryID, rpc.MaxEcho)), nil)
	case head.Ready != nil && !*head.Ready:
		return nil, c.unavailable(ReasonNotReady, "the provider reports ready false", nil)
	}
	target := reflect.New(readinessTypes[cfg.Role]).Interface()
	if err := json.Unmarshal(raw, target); err != nil {
		return nil, c.unavailable(ReasonHandshake, "malformed readiness: "+err.Error(), err)
	}
	missing := func(format string, args ...any) (*Preflight, error) {
		return nil, c.unavailable(ReasonCapability, fmt.Sprintf(format, args...), nil)
	}
	switch r := target.(type) {
	case *agentpmservice.ModelReadiness:
		caps := r.Capabilities
		if caps == nil {
			caps = &agentpmservice.ModelCapabilities{SemanticActions: r.SemanticActions, StructuredOutput: r.StructuredOutput}
		}
		model := r.Model
		if caps.Model != nil {
			model = caps.Model
		}
		if in, _ := c.cfg.Initialize.(*agentpmservice.ModelInitialize); model != nil && in != nil && in.Model != "" && *model != in.Model {
			return missing("the provider serves the model %q, not the configured %q", rpc.Truncate(*model, rpc.MaxEcho), in.Model)
		}
		if caps.Provider != nil && *caps.Provider != cfg.RegistryID {
			return missing("the provider is %q, not the configured %q", rpc.Truncate(*caps.Provider, rpc.MaxEcho), cfg.RegistryID)
		}
		if !caps.GetSemanticActions() || !caps.GetStructuredOutput() {
			return missing("a model provider must propose semantic actions and produce structured output")
		}
	case *agentpmservice.EmbeddingReadiness:
		spaces := slices.Concat(r.EmbeddingSpaces, r.Spaces)
		if r.Capabilities != nil {
			spaces = append(spaces, r.Capabilities.EmbeddingSpaces...)
		}
		if !slices.ContainsFunc(spaces, func(s agentpmservice.EmbeddingSpace) bool { return s.Provider != "" && s.Model != "" }) {
			return missing("the provider advertises no embedding space")
		}
	case *agentpmservice.HookReadiness:
		if r.Hooks != nil {
			for _, h := range r.Hooks {
				if !h.Known() {
					return missing("the provider advertises the unknown hook %q", rpc.Truncate(string(h), rpc.MaxEcho))
				}
			}
			if in, _ := c.cfg.Initialize.(*agentpmservice.HookInitialize); in != nil {
				for _, h := range in.Hooks {
					if !slices.Contains(r.Hooks, h) {
						return missing("the provider does not serve the configured hook %s", h)
					}
				}
			}
		}
	case *agentpmservice.KnowledgeReadiness:
		if err := c.checkKnowledge(r, pf); err != nil {
			return nil, err
		}
	case *agentpmservice.MemoryReadiness:
		if err := c.checkMemory(r); err != nil {
			return nil, err
		}
	case *agentpmservice.ApprovalReadiness:
		caps := r.Capabilities
		if caps == nil {
			caps = &agentpmservice.ApprovalCapabilities{RequestApproval: r.RequestApproval, Approval: r.Approval}
		}
		if (caps.RequestApproval != nil && !*caps.RequestApproval) || (caps.Approval != nil && !*caps.Approval) {
			return missing("the provider says it does not serve request_approval")
		}
	}
	return pf, nil
}

var readinessTypes = map[agentpmservice.ServiceRole]reflect.Type{
	agentpmservice.ServiceRoleModel:     reflect.TypeFor[agentpmservice.ModelReadiness](),
	agentpmservice.ServiceRoleEmbedding: reflect.TypeFor[agentpmservice.EmbeddingReadiness](),
	agentpmservice.ServiceRoleHook:      reflect.TypeFor[agentpmservice.HookReadiness](),
	agentpmservice.ServiceRoleKnowledge: reflect.TypeFor[agentpmservice.KnowledgeReadiness](),
	agentpmservice.ServiceRoleMemory:    reflect.TypeFor[agentpmservice.MemoryReadiness](),
	agentpmservice.ServiceRoleApproval:  reflect.TypeFor[agentpmservice.ApprovalReadiness](),
}

// checkKnowledge requires a mode the Harness can use and lists the
// packages of the handshake the provider did not attest ready.
func (c *Client) checkKnowledge(r *agentpmservice.KnowledgeReadiness, pf *Preflight) error {
	modes, attested := r.Modes, slices.Concat(r.Packages, r.Attestations)
	if r.Capabilities != nil {
		modes = slices.Concat(modes, r.Capabilities.Modes)
		attested = append(attested, r.Capabilities.Packages...)
	}
	if !slices.ContainsFunc(modes, func(m string) bool {
		return m == "context_document" || m == "vector_query" || m == "context" || m == "vector"
	}) {
		return c.unavailable(ReasonCapability, "the provider advertises neither context_document nor vector_query", nil)
	}
	in, _ := c.cfg.Initialize.(*agentpmservice.KnowledgeInitialize)
	if in == nil {
		return nil
	}
	for _, snap := range in.Packages {
		ok := slices.ContainsFunc(attested, func(a agentpmservice.KnowledgePackageAttestation) bool {
			name := a.Package
			if name == nil {
				name = a.Name
			}
			return name != nil && *name == snap.Name && a.Version == snap.Version && a.Ready
		})
		if !ok {
			u := c.unavailable(ReasonCapability, "the provider does not attest the package ready", nil)
			u.Package, u.Version = snap.Name, snap.Version
			pf.Unavailable = append(pf.Unavailable, u)
		}
	}
	return nil
}

// checkMemory requires the descriptor, in any of the places consumers read
// it, every routed package attested ready and every routed space's
// retrieval modes advertised.
func (c *Client) checkMemory(r *agentpmservice.MemoryReadiness) error {
	modes, attested, described := r.RetrievalModes, slices.Concat(r.Packages, r.Attestations), r.Descriptor != nil || r.SpaceModels != nil
	if r.Descriptor != nil {
		modes = slices.Concat(modes, r.Descriptor.RetrievalModes)
	}
	if caps := r.Capabilities; caps != nil {
		described = described || caps.Descriptor != nil || caps.SpaceModels != nil
		modes = slices.Concat(modes, caps.RetrievalModes)
		if caps.Descriptor != nil {
			modes = slices.Concat(modes, caps.Descriptor.RetrievalModes)
		}
		attested = append(attested, caps.Packages...)
	}
	if !described {
		return c.unavailable(ReasonCapability, "the provider advertises no memory descriptor", nil)
	}
	in, _ := c.cfg.Initialize.(*agentpmservice.MemoryInitialize)
	if in == nil {
		return nil
	}
	for _, sp := range in.Spaces {
		if !slices.ContainsFunc(attested, func(a agentpmservice.MemoryPackageAttestation) bool {
			name := a.Package
			if name == nil {
				name = a.Name
			}
			return name != nil && *name == sp.Package && (a.Version == nil || *a.Version == sp.PackageVersion) && a.Ready
		}) {
			return c.unavailable(ReasonCapability, fmt.Sprintf("the provider does not attest %s@%s ready", sp.Package, sp.PackageVersion), nil)
		}
		for _, m := range sp.RetrievalModes {
			if !slices.Contains(modes, m) {
				return c.unavailable(ReasonCapability, fmt.Sprintf("space %s of %s needs the retrieval mode %s, which the provider does not advertise", sp.Space, sp.Package, m), nil)
			}
		}
	}
	return nil
}

// packageUnavailable refuses a retrieval for a knowledge package the
// provider did not attest.
func (c *Client) packageUnavailable(params any) error {
	p, ok := params.(*agentpmservice.RetrievePayload)
	if !ok || p == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, u := range c.preflight.Unavailable {
		if u.Package == p.Request.Package && u.Version == p.Request.Version {
			return u
		}
	}
	return nil
}
