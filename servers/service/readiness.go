package service

// The handshake's answer: what the role's Initialize field returns, with
// the members every answer carries filled in and the capabilities made to
// say what the handlers really serve.

import (
	"context"
	"slices"

	"github.com/bridgekit/bridgekit/gen/agentpmservice"
)

// wrapInitialize replaces the role's Initialize field of s.h with one that
// calls the provider's (if set) and completes its answer.
func (s *Server) wrapInitialize() {
	h := &s.h
	switch s.role {
	case agentpmservice.ServiceRoleModel:
		h.InitializeModel = complete(h.InitializeModel, func(r *agentpmservice.ModelReadiness, p *agentpmservice.ModelInitialize) {
			s.common(&r.RegistryID, &r.Ready, &r.Role, &r.ProtocolVersion, p.RegistryID)
		})
	case agentpmservice.ServiceRoleEmbedding:
		h.InitializeEmbedding = complete(h.InitializeEmbedding, func(r *agentpmservice.EmbeddingReadiness, p *agentpmservice.EmbeddingInitialize) {
			s.common(&r.RegistryID, &r.Ready, &r.Role, &r.ProtocolVersion, p.RegistryID)
			spaces := slices.Concat(r.EmbeddingSpaces, r.Spaces)
			if r.Capabilities != nil {
				spaces = append(spaces, r.Capabilities.EmbeddingSpaces...)
			}
			if !slices.ContainsFunc(spaces, func(e agentpmservice.EmbeddingSpace) bool {
				return e.Provider != "" && e.Model != "" && e.Dimensions > 0
			}) {
				s.notReady(&r.Ready, "it advertises no usable embedding space")
			}
		})
	case agentpmservice.ServiceRoleHook:
		h.InitializeHook = complete(h.InitializeHook, func(r *agentpmservice.HookReadiness, p *agentpmservice.HookInitialize) {
			s.common(&r.RegistryID, &r.Ready, &r.Role, &r.ProtocolVersion, p.RegistryID)
			if served := s.h.Hooks(); len(served) > 0 {
				r.Hooks = served
			}
			if s.h.Fallback != nil {
				return // it may serve hook ids that no field names
			}
			for _, want := range p.Hooks {
				if !slices.Contains(r.Hooks, want) {
					s.notReady(&r.Ready, "hook "+string(want)+" is configured but not served")
					break
				}
			}
		})
	case agentpmservice.ServiceRoleKnowledge:
		h.InitializeKnowledge = complete(h.InitializeKnowledge, func(r *agentpmservice.KnowledgeReadiness, p *agentpmservice.KnowledgeInitialize) {
			s.common(&r.RegistryID, &r.Ready, &r.Role, &r.ProtocolVersion, p.RegistryID)
			modes := r.Modes
			if r.Capabilities != nil {
				modes = slices.Concat(modes, r.Capabilities.Modes)
			}
			if !slices.ContainsFunc(modes, func(m string) bool {
				return m == "context_document" || m == "vector_query" || m == "context" || m == "vector"
			}) {
				s.notReady(&r.Ready, "it advertises neither context_document nor vector_query")
			}
		})
	case agentpmservice.ServiceRoleMemory:
		h.InitializeMemory = complete(h.InitializeMemory, func(r *agentpmservice.MemoryReadiness, p *agentpmservice.MemoryInitialize) {
			s.common(&r.RegistryID, &r.Ready, &r.Role, &r.ProtocolVersion, p.RegistryID)
			s.memoryDescriptor(r)
		})
	case agentpmservice.ServiceRoleApproval:
		h.InitializeApproval = complete(h.InitializeApproval, func(r *agentpmservice.ApprovalReadiness, p *agentpmservice.ApprovalInitialize) {
			s.common(&r.RegistryID, &r.Ready, &r.Role, &r.ProtocolVersion, p.RegistryID)
			yes := true
			if r.Capabilities != nil {
				r.Capabilities.RequestApproval, r.Capabilities.Approval = &yes, nil
			} else {
				r.RequestApproval, r.Approval = &yes, nil
			}
		})
	}
}

// complete returns an Initialize field that runs the provider's (or
// answers with an empty readiness when it has none) and then fill.
func complete[P, R any](user func(context.Context, *P) (*R, error), fill func(*R, *P)) func(context.Context, *P) (*R, error) {
	return func(ctx context.Context, p *P) (*R, error) {
		r := new(R)
		if user != nil {
			res, err := user(ctx, p)
			if err != nil {
				return nil, err
			}
			if res != nil {
				r = res
			}
		}
		fill(r, p)
		return r, nil
	}
}

// common fills in the members every handshake answer carries: the role and
// protocol version this server speaks, the requested registry id unless
// the provider gave one, and ready true unless the provider said otherwise.
func (s *Server) common(registryID **string, ready **bool, role **string, version **int64, requested string) {
	if *registryID == nil {
		*registryID = &requested
	}
	r, v := string(s.role), int64(ProtocolVersion)
	*role, *version = &r, &v
	if *ready == nil {
		yes := true
		*ready = &yes
	}
}

// notReady turns a readiness false (a new value: the provider's may be
// shared), saying why in the log.
func (s *Server) notReady(ready **bool, why string) {
	no := false
	*ready = &no
	if l := s.opts.Conn.Logger; l != nil {
		l.Warn("service: answering the handshake with ready false", "role", s.role, "reason", why)
	}
}

// memoryDescriptor makes the memory answer carry its descriptor in both the
// forms consumers read (the flat members and descriptor, beside packages;
// under capabilities when the provider put them there), claiming atomic
// batches only when lifecycle commits are served and durable trigger state
// only when operation state is. A memory service without a descriptor is not
// ready.
func (s *Server) memoryDescriptor(r *agentpmservice.MemoryReadiness) {
	var d *agentpmservice.MemoryDescriptor
	switch {
	case r.Descriptor != nil:
		d = r.Descriptor
	case r.SpaceModels != nil || r.RetrievalModes != nil:
		d = &agentpmservice.MemoryDescriptor{SpaceModels: r.SpaceModels, RetrievalModes: r.RetrievalModes,
			RetentionActions: r.RetentionActions, Constraints: r.Constraints, Capacity: deref(r.Capacity),
			DurableTriggerState: deref(r.DurableTriggerState), AtomicBatches: deref(r.AtomicBatches)}
	case r.Capabilities != nil && r.Capabilities.Descriptor != nil:
		d = r.Capabilities.Descriptor
	case r.Capabilities != nil && (r.Capabilities.SpaceModels != nil || r.Capabilities.RetrievalModes != nil):
		c := r.Capabilities
		d = &agentpmservice.MemoryDescriptor{SpaceModels: c.SpaceModels, RetrievalModes: c.RetrievalModes,
			RetentionActions: c.RetentionActions, Constraints: c.Constraints, Capacity: deref(c.Capacity),
			DurableTriggerState: deref(c.DurableTriggerState), AtomicBatches: deref(c.AtomicBatches)}
	default:
		s.notReady(&r.Ready, "it advertises no memory descriptor")
		return
	}
	live := *d
	live.AtomicBatches = d.AtomicBatches && s.h.MemoryCommitLifecycle != nil
	live.DurableTriggerState = d.DurableTriggerState && s.h.MemoryLoadOperationState != nil && s.h.MemoryStoreOperationState != nil
	nonNil(&live.SpaceModels)
	nonNil(&live.RetrievalModes)
	nonNil(&live.RetentionActions)
	nonNil(&live.Constraints)
	if c := r.Capabilities; c != nil {
		c.SpaceModels, c.RetrievalModes, c.RetentionActions, c.Constraints = live.SpaceModels, live.RetrievalModes, live.RetentionActions, live.Constraints
		c.Capacity, c.DurableTriggerState, c.AtomicBatches = &live.Capacity, &live.DurableTriggerState, &live.AtomicBatches
		c.Descriptor = &live
		return
	}
	r.SpaceModels, r.RetrievalModes, r.RetentionActions, r.Constraints = live.SpaceModels, live.RetrievalModes, live.RetentionActions, live.Constraints
	r.Capacity, r.DurableTriggerState, r.AtomicBatches = &live.Capacity, &live.DurableTriggerState, &live.AtomicBatches
	r.Descriptor = &live
	if r.Packages == nil && r.Attestations == nil {
		r.Packages = []agentpmservice.MemoryPackageAttestation{}
	}
}

func deref(b *bool) bool { return b != nil && *b }

// nonNil makes a nil list an empty one, so that it is written as [].
func nonNil[T any](list *[]T) {
	if *list == nil {
		*list = []T{}
	}
}
