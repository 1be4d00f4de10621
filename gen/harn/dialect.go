package harn

import (
	"errors"
	"fmt"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/bridgekit/bridgekit/gen/acp"
	"github.com/bridgekit/bridgekit/runtime/wire"
)

// Harn's dialect of ACP.
//
// gen/acp is ACP and nothing else: it keeps what Harn adds as it was sent,
// a session/update variant ACP does not know in acp.SessionUpdate.Unknown
// and a _meta object as raw JSON. This file types them: UpdateOf for the
// updates, ToolLifecycleOf, ContentFieldsOf, PermissionResponseOf,
// PromptResultOf and AgentCapabilitiesOf for _meta.harn, and SessionUpdate.ACP
// and SetMeta the other way. Every decode here applies ContractHarn, as a
// Harn connection does.

// UpdateOf returns Harn's variant of u, an update of a session/update
// notification. ACP does not know Harn's tags, so an ACP decoder keeps such
// an update verbatim in u.Unknown; UpdateOf decodes it:
//
//	switch h, err := harn.UpdateOf(n.Update); {
//	case err != nil:
//		// a Harn tag whose update does not fit Harn's schema
//	case h.Progress != nil:
//		show(h.Progress.Meta.Harn.Message)
//	}
//
// For one of ACP's own variants (u.Unknown empty) it returns the zero
// SessionUpdate, no variant set and Tag() "". An update whose tag neither
// knows (a later Harn's) comes back in the result's Unknown, as sent. An
// update with one of Harn's tags that does not decode is an error (a
// *wire.DecodeError inside, with the JSON pointer within the update).
func UpdateOf(u acp.SessionUpdate) (SessionUpdate, error) {
	var h SessionUpdate
	if len(u.Unknown) == 0 {
		return h, nil
	}
	if err := json.Unmarshal(u.Unknown, &h, ContractHarn.Options()); err != nil {
		return SessionUpdate{}, fmt.Errorf("harn: session update: %w", err)
	}
	return h, nil
}

// ACP returns u as the acp.SessionUpdate that carries it on the wire, to
// send in an acp.SessionNotification: one of Harn's variants is encoded
// into Unknown, which ACP writes back unchanged. An Unknown that holds
// one of ACP's own variants becomes that variant.
func (u SessionUpdate) ACP() (acp.SessionUpdate, error) {
	var out acp.SessionUpdate
	data, err := wire.Marshal(u)
	if err != nil {
		return out, err
	}
	if err := json.Unmarshal(data, &out); err != nil {
		return acp.SessionUpdate{}, err
	}
	return out, nil
}

// ToolLifecycleOf reads Harn's fields of a tool call: the harn member of
// the _meta of an acp.ToolCall or acp.ToolCallUpdate (on session/update,
// and the toolCall of session/request_permission). It returns nil when
// _meta, or its harn member, is absent or null, and an error when they do
// not have Harn's shape.
func ToolLifecycleOf(meta wire.Nullable[jsontext.Value]) (*ToolLifecycle, error) {
	m, err := metaOf[ToolCallMeta](meta)
	return m.Harn, err
}

// ContentFieldsOf reads Harn's fields of a content block (visible_text and
// visible_delta of a message chunk's text, permission_preview of a diff):
// the harn member of the _meta of an acp.TextContent or acp.Diff, nil when
// absent or null.
func ContentFieldsOf(meta wire.Nullable[jsontext.Value]) (*ContentFields, error) {
	m, err := metaOf[ContentMeta](meta)
	return m.Harn, err
}

// PermissionResponseOf reads the harn member of the _meta of an
// acp.RequestPermissionResponse (a host's typed permissionDecision), nil
// when absent or null.
func PermissionResponseOf(meta wire.Nullable[jsontext.Value]) (*PermissionResponse, error) {
	m, err := metaOf[PermissionResponseMeta](meta)
	return m.Harn, err
}

// PromptResultOf reads the harn member of the _meta of an
// acp.PromptResponse: the loop's terminal outcome (Terminal; only kind
// natural is completion), nil when absent or null.
func PromptResultOf(meta wire.Nullable[jsontext.Value]) (*PromptResult, error) {
	m, err := metaOf[PromptResponseMeta](meta)
	return m.Harn, err
}

// AgentCapabilitiesOf reads what a Harn agent advertises about its ACP
// extensions at initialize: the harn member of the _meta of its
// acp.AgentCapabilities, nil when absent or null (a plain ACP agent).
func AgentCapabilitiesOf(meta wire.Nullable[jsontext.Value]) (*AgentCapabilities, error) {
	m, err := metaOf[AgentCapabilitiesMeta](meta)
	return m.Harn, err
}

// metaOf decodes an ACP _meta object as T, Harn's type of that _meta.
func metaOf[T any, P interface {
	*T
	json.UnmarshalerFrom
}](meta wire.Nullable[jsontext.Value]) (T, error) {
	var m T
	raw, ok := meta.Get()
	if !ok || len(raw) == 0 {
		return m, nil
	}
	if err := json.Unmarshal(raw, P(&m), ContractHarn.Options()); err != nil {
		var zero T
		return zero, fmt.Errorf("harn: _meta: %w", err)
	}
	return m, nil
}

// MetaValue is one of Harn's _meta.harn values, which SetMeta writes.
type MetaValue interface {
	*ToolLifecycle | *ContentFields | *PermissionResponse | *PromptResult | *AgentCapabilities
}

// ErrMetaNotObject reports a _meta that SetMeta cannot add harn to.
var ErrMetaNotObject = errors.New("harn: _meta is not a JSON object")

// SetMeta sets the harn member of *meta, the _meta of an ACP value, to v,
// keeping every other member in its place (a nil v removes harn):
//
//	tc := acp.ToolCall{ToolCallID: "t1", Title: "Read file"}
//	err := harn.SetMeta(&tc.Meta, &harn.ToolLifecycle{ToolName: new("read")})
//
// An absent or null _meta becomes an object, unless v is nil: then it is
// left as it is.
func SetMeta[M MetaValue](meta *wire.Nullable[jsontext.Value], v M) error {
	raw, ok := meta.Get()
	if v == nil && (!ok || len(raw) == 0) {
		return nil
	}
	var m wire.Extras
	if ok && len(raw) > 0 {
		if raw.Kind() != '{' {
			return ErrMetaNotObject
		}
		var err error
		if m, err = members(raw); err != nil {
			return err
		}
	}
	if v == nil {
		m.Delete("harn")
	} else {
		data, err := wire.Marshal(v)
		if err != nil {
			return err
		}
		m.Set("harn", data)
	}
	*meta = wire.Some(object(m))
	return nil
}

// Notification returns the session/update params that carry u for
// session, to send with acp.ClientPeer.SessionUpdate.
func (u SessionUpdate) Notification(session acp.SessionID) (*acp.SessionNotification, error) {
	up, err := u.ACP()
	if err != nil {
		return nil, err
	}
	return &acp.SessionNotification{SessionID: session, Update: up}, nil
}
