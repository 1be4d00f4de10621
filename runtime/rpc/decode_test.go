package rpc_test

import (
	"context"
	"errors"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/bridgekit/bridgekit/runtime/rpc"
)

type strictParams struct {
	A int `json:"a"`
}

// DecodeParams' error is ErrInvalidParams and unwraps to the decode error,
// with the JSON pointer of the member at fault; the decode options given
// apply, and a nil one is skipped.
func TestDecodeParamsErrorUnwraps(t *testing.T) {
	raw := jsontext.Value(`{"a":1,"b":2}`)
	if err := rpc.DecodeParams(raw, new(strictParams), nil); err != nil {
		t.Fatalf("plain: %v", err)
	}
	err := rpc.DecodeParams(raw, new(strictParams), nil, json.RejectUnknownMembers(true))
	var se *json.SemanticError
	if !errors.Is(err, rpc.ErrInvalidParams) || !errors.As(err, &se) || se.JSONPointer != "/b" {
		t.Fatalf("strict: %v", err)
	}
	var e *rpc.Error
	if !errors.As(err, &e) || e.Code != rpc.CodeInvalidParams || e.Data != nil {
		t.Fatalf("the reply: %+v", e)
	}
}

// Options.DecodeOptions reach every request's DecodeParams.
func TestDecodeOptionsReachRequests(t *testing.T) {
	forTransports(t, func(t *testing.T, tr transport) {
		p := tr.rawPeer(t, rpc.HandlerFunc(func(_ context.Context, req *rpc.Request) (any, error) {
			var v strictParams
			return v, req.DecodeParams(&v)
		}), &rpc.Options{DecodeOptions: json.RejectUnknownMembers(true)})
		p.send(`{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":1}}`)
		p.expect(`{"jsonrpc":"2.0","id":1,"result":{"a":1}}`)
		p.send(`{"jsonrpc":"2.0","id":2,"method":"m","params":{"a":1,"b":2}}`)
		if got := p.recv(); !errors.Is(decodeReplyErr(t, got), rpc.ErrInvalidParams) {
			t.Fatalf("reply %s", got)
		}
	})
}

func decodeReplyErr(t *testing.T, line string) error {
	t.Helper()
	var r struct {
		Error struct {
			Code int64 `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(line), &r); err != nil {
		t.Fatal(err)
	}
	return &rpc.Error{Code: r.Error.Code}
}
