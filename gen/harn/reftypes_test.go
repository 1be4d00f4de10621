package harn_test

import (
	"bytes"
	"context"
	stdjson "encoding/json"
	"slices"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/bridgekit/bridgekit/gen/harn"
	"github.com/bridgekit/bridgekit/runtime/wire"
)

// Types are no stricter than Harn's reference catalogue: where the
// reference leaves a value open (any JSON, an open object), every value it
// allows decodes, is kept and is encoded again unchanged.

// anyKinds are values of every JSON kind.
var anyKinds = []string{`"text"`, `0`, `-7`, `2.5`, `123456789012345678901234567890`, `true`, `false`, `null`, `{}`, `{"k":[1,{"n":null}]}`, `[]`, `[1,"a",{}]`}

// roundTripExact decodes doc into v and encodes it again; the encoding
// must be doc itself, up to the order of object members.
func roundTripExact(t *testing.T, doc string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(doc), v); err != nil {
		t.Errorf("%s: %v", doc, err)
		return
	}
	out, err := json.Marshal(v, wire.Fidelity)
	if err != nil {
		t.Errorf("%s: encoding again: %v", doc, err)
		return
	}
	if !jsonEqual(out, []byte(doc)) {
		t.Errorf("encoded again as\n%s\nwant\n%s", out, doc)
	}
}

// jsonEqual reports whether a and b are the same JSON value: members in
// any order, numbers compared as written.
func jsonEqual(a, b []byte) bool {
	canon := func(doc []byte) (string, bool) {
		d := stdjson.NewDecoder(bytes.NewReader(doc))
		d.UseNumber()
		var v any
		if d.Decode(&v) != nil {
			return "", false
		}
		out, err := stdjson.Marshal(v) // maps sorted
		return string(out), err == nil
	}
	x, ok1 := canon(a)
	y, ok2 := canon(b)
	return ok1 && ok2 && x == y
}

// process.set_default_shell's result is unspecified in the reference (any
// JSON; a host usually answers the selected shell): a runtime reads every
// answer and keeps it.
func TestSetDefaultShellResultIsOpen(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, v := range append(slices.Clone(anyKinds), `{"id":"zsh","label":"zsh","path":"/bin/zsh","platform":"linux","available":true,"supports_login":true,"supports_interactive":true,"default_args":["-c"],"login_args":["-l","-c"],"source":"env","icon":"z"}`) {
		if v == "null" {
			continue // no result at all: the call has none to keep
		}
		host := &harn.HostHandlers{HostCall: func(context.Context, *harn.HostCallParams) (jsontext.Value, error) {
			return jsontext.Value(v), nil
		}}
		_, vmConn := pair(t, harn.HostHandler(host, nil), nil)
		res, err := harn.NewHostPeer(vmConn).ProcessSetDefaultShell(ctx, &harn.HostCallParams{}, &harn.SetDefaultShellRequest{ShellID: "zsh"})
		if err != nil {
			t.Errorf("answer %s: %v", v, err)
			continue
		}
		out, err := json.Marshal(res, wire.Fidelity)
		if err != nil || !jsonEqual(out, []byte(v)) {
			t.Errorf("answer %s kept as %s (%v)", v, out, err)
		}
	}
}
