package harn_test

import (
	"bytes"
	"context"
	stdjson "encoding/json"
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/bridgekit/bridgekit/gen/acp"
	"github.com/bridgekit/bridgekit/gen/harn"
	"github.com/bridgekit/bridgekit/runtime/wire"
)

// Types are no stricter than Harn's reference catalogue: where the
// reference leaves a member open (any JSON, an open object, an integer of
// any size), every value it allows decodes, is kept and is encoded again
// unchanged.

// anyKinds are values of every JSON kind.
var anyKinds = []string{`"text"`, `0`, `-7`, `2.5`, `123456789012345678901234567890`, `true`, `false`, `null`, `{}`, `{"k":[1,{"n":null}]}`, `[]`, `[1,"a",{}]`}

// roundTripExact decodes doc into v under Harn's contract and encodes it
// again; the encoding must be doc itself, up to the order of object
// members. The Harn parts gen/acp keeps as sent must decode with gen/harn's
// accessors too (harnView).
func roundTripExact(t *testing.T, doc string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(doc), v, harn.ContractHarn.Options()); err != nil {
		t.Errorf("%s: %v", doc, err)
		return
	}
	if _, err := harnView(reflect.ValueOf(v)); err != nil {
		t.Errorf("%s: Harn's parts: %v", doc, err)
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

// referenceOpenMembers returns the members of _meta.harn that the
// reference's session/update variant tag leaves untyped ({}).
func referenceOpenMembers(t *testing.T, tag string) []string {
	t.Helper()
	var entries []struct {
		Variant string
		Params  struct {
			Properties struct {
				Update struct {
					Properties struct {
						Meta struct {
							Properties struct {
								Harn struct {
									Properties map[string]stdjson.RawMessage
								}
							}
						} `json:"_meta"`
					}
				}
			}
		}
	}
	if err := stdjson.Unmarshal(readShared(t, referenceCatalogue), &entries); err != nil {
		t.Fatal(err)
	}
	var open []string
	for _, e := range entries {
		if e.Variant != tag {
			continue
		}
		for name, s := range e.Params.Properties.Update.Properties.Meta.Properties.Harn.Properties {
			if string(s) == "{}" {
				open = append(open, name)
			}
		}
	}
	if len(open) == 0 {
		t.Fatalf("the reference has no open member of %s", tag)
	}
	slices.Sort(open)
	return open
}

// Every member of transcript_compacted's and transcript_projected's
// _meta.harn that the reference leaves untyped takes a value of any kind.
func TestTranscriptMembersTakeAnyKind(t *testing.T) {
	for _, tag := range []string{"transcript_compacted", "transcript_projected"} {
		for _, member := range referenceOpenMembers(t, tag) {
			for _, v := range anyKinds {
				doc := fmt.Sprintf(`{"sessionId":"s","update":{"sessionUpdate":%q,"_meta":{"harn":{%q:%s}}}}`, tag, member, v)
				var n acp.SessionNotification
				roundTripExact(t, doc, &n)
				if u, err := harn.UpdateOf(n.Update); err != nil || u.Unknown != nil || u.Tag() != tag {
					t.Errorf("%s: read as %+v (%v)", doc, u, err)
				}
			}
		}
	}
}

// approvalRequest's undo_metadata is untyped in the reference ({}).
func TestUndoMetadataTakesAnyKind(t *testing.T) {
	for _, v := range anyKinds {
		doc := `{"sessionId":"s","toolCall":{"toolCallId":"t","_meta":{"harn":{"approvalRequest":{"id":"t","action":"write","principal":"s","requested_at":"2026-01-01T00:00:00Z","approvers_required":1,"undo_metadata":` + v + `}}}},"options":[]}`
		roundTripExact(t, doc, new(acp.RequestPermissionRequest))
	}
}

// initialize's agentCapabilities._meta.harn.extensionMethods is an open
// object in the reference: a value of any kind is kept.
func TestExtensionMethodsTakeAnyValue(t *testing.T) {
	for _, v := range anyKinds {
		doc := `{"protocolVersion":1,"agentCapabilities":{"_meta":{"harn":{"extensionMethods":{"_harn/agentEvent":{"kinds":["a"]},"other":` + v + `}}}}}`
		roundTripExact(t, doc, new(acp.InitializeResponse))
	}
}

// A progress update's progress and total are integers in the reference:
// one beyond float64's exact range is kept exactly.
func TestProgressKeepsLargeIntegers(t *testing.T) {
	for _, n := range []string{"9007199254740993", "9223372036854775807", "-9007199254740993", "0"} {
		doc := `{"sessionId":"s","update":{"sessionUpdate":"progress","_meta":{"harn":{"phase":"p","message":"m","progress":` + n + `,"total":` + n + `}}}}`
		var u acp.SessionNotification
		roundTripExact(t, doc, &u)
		h, err := harn.UpdateOf(u.Update)
		if p := h.Progress; err != nil || p == nil || p.Meta.Harn.Progress == nil || fmt.Sprint(*p.Meta.Harn.Progress) != n || fmt.Sprint(*p.Meta.Harn.Total) != n {
			t.Errorf("%s: read as %+v (%v)", n, p, err)
		}
	}
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
