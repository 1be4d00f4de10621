package harn

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/bridgekit/bridgekit/gen/acp"
	"github.com/bridgekit/bridgekit/runtime/rpc"
	"github.com/bridgekit/bridgekit/runtime/wire"
)

// The legacy reader.
//
// Since Harn's #904 (tool calls) and #905 (its session/update extensions),
// every vendor field rides under _meta.harn of the object it extends, and
// Harn's contract (ContractHarn, applied on every Harn connection by
// BridgeConnOptions) rejects the older shape, with the fields at the
// object's root, with wire.ErrForbiddenMember: the spec forbids exactly
// those members there under that contract (from a plain ACP agent they are
// kept in Extra). The legacy reader accepts both shapes. It is opt-in, for
// hosts that must talk to older Harn builds: it relocates each member that
// Harn's contract forbids, at the root of the update or of its content
// block, under that object's _meta.harn, and then decodes under the
// contract. Which members move is decided by the
// spec (its forbidden members), not by a list kept here.

// ErrLegacyConflict reports a vendor field present both at the root of an
// update (the legacy place) and under its _meta.harn, with different values.
var ErrLegacyConflict = errors.New("harn: a vendor field is both at the root and under _meta.harn, with different values")

// maxRelocations bounds the members one document may have moved.
const maxRelocations = 256

// ReadLegacySessionUpdate decodes the params of a session/update like a
// Harn connection (under ContractHarn), and also accepts the shapes of
// Harn builds older than #904/#905, whose vendor fields sit at the root of
// the update or of its content block instead of under _meta.harn. The result is the current
// shape: re-encoding it writes the fields under _meta.harn.
func ReadLegacySessionUpdate(params []byte) (*acp.SessionNotification, error) {
	var n acp.SessionNotification
	if _, err := upgrade(params, &n); err != nil {
		return nil, err
	}
	return &n, nil
}

// UpgradeSessionUpdate rewrites the params of a session/update in a legacy
// shape (see ReadLegacySessionUpdate) into the current one, which a Harn
// connection accepts. A document already in the current shape is
// returned as it is; one that does not decode even after its forbidden
// members are relocated is an error wrapping the decoder's.
func UpgradeSessionUpdate(params []byte) ([]byte, error) {
	var n acp.SessionNotification
	return upgrade(params, &n)
}

// decodeUpdate decodes the params of a session/update as a Harn host
// reads them: ACP's notification under Harn's contract, the update as
// Harn's variant (UpdateOf) when ACP does not know its tag, and the
// _meta.harn the legacy reader moves fields under (of a tool call, or of a
// message chunk's text).
func decodeUpdate(doc []byte, n *acp.SessionNotification) error {
	*n = acp.SessionNotification{}
	if err := json.Unmarshal(doc, n, ContractHarn.Options()); err != nil {
		return err
	}
	u := &n.Update
	var err error
	switch {
	case u.Unknown != nil:
		_, err = UpdateOf(*u)
	case u.ToolCall != nil:
		_, err = ToolLifecycleOf(u.ToolCall.Meta)
	case u.ToolCallUpdate != nil:
		_, err = ToolLifecycleOf(u.ToolCallUpdate.Meta)
	default:
		for _, c := range []*acp.ContentChunk{u.AgentMessageChunk, u.AgentThoughtChunk, u.UserMessageChunk} {
			if c != nil && c.Content.Text != nil {
				_, err = ContentFieldsOf(c.Content.Text.Meta)
			}
		}
	}
	return err
}

func upgrade(params []byte, n *acp.SessionNotification) ([]byte, error) {
	err := decodeUpdate(params, n)
	doc := params
	for range maxRelocations {
		if err == nil {
			return doc, nil
		}
		var de *wire.DecodeError
		if !errors.Is(err, wire.ErrForbiddenMember) || !errors.As(err, &de) {
			return nil, err
		}
		moved, ok, merr := relocate(doc, de.Member)
		if merr != nil {
			return nil, merr
		}
		if !ok {
			return nil, err
		}
		doc = moved
		err = decodeUpdate(doc, n)
	}
	return nil, fmt.Errorf("harn: more than %d legacy members: %w", maxRelocations, err)
}

// relocate moves member from the root of the update in params, or else from
// the root of the update's content block, under that object's _meta.harn.
// ok is false when neither holds the member.
func relocate(params []byte, member string) (out []byte, ok bool, err error) {
	p, err := members(params)
	if err != nil {
		return nil, false, err
	}
	raw, has := p.Get("update")
	if !has {
		return nil, false, nil
	}
	u, err := members(raw)
	if err != nil {
		return nil, false, err
	}
	if v, has := u.Get(member); has {
		if err := moveUnderMeta(&u, member, v); err != nil {
			return nil, false, err
		}
	} else {
		content, has := u.Get("content")
		if !has || content.Kind() != '{' {
			return nil, false, nil
		}
		c, err := members(content)
		if err != nil {
			return nil, false, err
		}
		v, has := c.Get(member)
		if !has {
			return nil, false, nil
		}
		if err := moveUnderMeta(&c, member, v); err != nil {
			return nil, false, err
		}
		u.Set("content", object(c))
	}
	p.Set("update", object(u))
	return object(p), true, nil
}

// moveUnderMeta moves the member name, whose value is v, of the object x
// under x._meta.harn.
func moveUnderMeta(x *wire.Extras, name string, v jsontext.Value) error {
	meta, err := child(*x, "_meta")
	if err != nil {
		return err
	}
	harn, err := child(meta, "harn")
	if err != nil {
		return err
	}
	if old, has := harn.Get(name); has {
		if !bytes.Equal(compact(old), compact(v)) {
			return fmt.Errorf("%w: %s", ErrLegacyConflict, name)
		}
	} else {
		harn.Set(name, v)
	}
	meta.Set("harn", object(harn))
	x.Set("_meta", object(meta))
	x.Delete(name)
	return nil
}

// child returns the members of x's object member name: none when it is
// absent or null, an error when it is not an object.
func child(x wire.Extras, name string) (wire.Extras, error) {
	v, has := x.Get(name)
	if !has || v.Kind() == 'n' {
		return nil, nil
	}
	if v.Kind() != '{' {
		return nil, fmt.Errorf("harn: %s is not an object, so legacy fields cannot move under it", name)
	}
	return members(v)
}

// members reads a JSON object's members in order.
func members(v []byte) (wire.Extras, error) {
	dec := jsontext.NewDecoder(bytes.NewReader(v))
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return nil, fmt.Errorf("harn: want a JSON object: %w", errors.Join(err, wire.ErrWrongKind))
	}
	var out wire.Extras
	for dec.PeekKind() != '}' {
		tok, err := dec.ReadToken()
		if err != nil {
			return nil, err
		}
		name := tok.String()
		val, err := dec.ReadValue()
		if err != nil {
			return nil, err
		}
		out = append(out, wire.Member{Name: name, Value: bytes.Clone(val)})
	}
	return out, nil
}

// object writes members as a JSON object.
func object(x wire.Extras) jsontext.Value {
	var b bytes.Buffer
	enc := jsontext.NewEncoder(&b, wire.Fidelity)
	_ = enc.WriteToken(jsontext.BeginObject)
	_ = x.Encode(enc)
	_ = enc.WriteToken(jsontext.EndObject)
	return bytes.TrimRight(b.Bytes(), "\n")
}

func compact(v jsontext.Value) []byte {
	c := v.Clone()
	if c.Compact() != nil {
		return v
	}
	return c
}

// AcceptLegacy is an rpc.Middleware that lets the session/update
// notifications of Harn builds older than #904/#905 reach next in the
// current shape (see ReadLegacySessionUpdate) instead of being rejected as
// invalid params; everything else passes through untouched. It is opt-in:
//
//	conn := harn.NewBridgeConn(r, w, harn.AcceptLegacy(harn.HostHandler(&bridge, &client)), nil)
//
// It decodes each session/update once more than a plain connection does.
func AcceptLegacy(next rpc.Handler) rpc.Handler {
	return rpc.HandlerFunc(func(ctx context.Context, req *rpc.Request) (any, error) {
		if req.Method == acp.MethodSessionUpdate && len(req.Params) > 0 {
			if up, err := UpgradeSessionUpdate(req.Params); err == nil && len(up) > 0 && !bytes.Equal(up, req.Params) {
				r := *req
				r.Params = up
				req = &r
			}
		}
		return next.Handle(ctx, req)
	})
}
