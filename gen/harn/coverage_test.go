package harn_test

import (
	stdjson "encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"

	"github.com/bridgekit/bridgekit/gen/acp"
	"github.com/bridgekit/bridgekit/gen/externalagent"
	"github.com/bridgekit/bridgekit/gen/harn"
	"github.com/bridgekit/bridgekit/runtime/wire"
)

// Harn's reference catalogue (shared/reference/harn/catalogue.json, every
// method of sections 1 and 2) and its protocol-artifact manifest are
// covered: each method is in this package's catalogue, ACP's or the
// external-agent one, in the same direction, with a status no weaker than
// the reference's; each session/update variant and agent event kind is a
// typed variant; each listed extension field is a typed member.

const referenceCatalogue = "../../../shared/reference/harn/catalogue.json"

// notCatalogued lists reference entries with no catalogue entry, and why.
var notCatalogued = map[string]string{
	"harnHostCall": "the DAP adapter's reverse request (harn-dap, Content-Length framed DAP, not JSON-RPC): another protocol than the stdio bridge",
}

// acpSide maps the bridge's sides onto ACP's.
var acpSide = map[string]string{"vm": "agent", "host": "client"}

func findMethod(methods []wire.MethodInfo, wire, to string) *wire.MethodInfo {
	for i, m := range methods {
		if m.Wire == wire && m.To == to {
			return &methods[i]
		}
	}
	return nil
}

// isTypedVariant reports whether a session/update tag is a typed variant:
// an object with only the tag either decodes into a variant field or fails
// for a missing member of that variant; an unknown tag lands in Unknown.
func isTypedVariant(tag string) bool {
	var u acp.SessionUpdate
	err := json.Unmarshal([]byte(`{"sessionUpdate":"`+tag+`"}`), &u)
	return err != nil || u.Unknown == nil
}

func TestReferenceCatalogueCovered(t *testing.T) {
	data := readShared(t, referenceCatalogue)
	var entries []struct {
		Method, Direction, Kind, Status, Operation, Variant string
	}
	if err := stdjson.Unmarshal(data, &entries); err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		where := e.Method
		if e.Operation != "" {
			where += " " + e.Operation
		}
		if e.Variant != "" {
			where += " " + e.Variant
		}
		if reason, ok := notCatalogued[e.Method]; ok {
			t.Logf("%s: not catalogued: %s", where, reason)
			continue
		}
		var to string
		switch {
		case strings.HasPrefix(e.Direction, "vm->host"):
			to = "host"
		case strings.HasPrefix(e.Direction, "host->vm"):
			to = "vm"
		case strings.Contains(e.Direction, "A2A"):
			if findMethod(externalagent.Methods, e.Method, "agent") == nil {
				t.Errorf("%s: not in the external-agent catalogue", where)
			}
			continue
		default:
			t.Errorf("%s: unknown direction %q", where, e.Direction)
			continue
		}
		switch {
		case e.Variant != "":
			if !isTypedVariant(e.Variant) {
				t.Errorf("%s: session/update variant %q is not typed", where, e.Variant)
			}
			continue
		case e.Operation != "":
			m := findMethod(harn.Methods, harn.MethodHostCall, "host")
			if !slices.ContainsFunc(m.Operations, func(o wire.OperationInfo) bool { return o.Match[0] == e.Operation }) {
				t.Errorf("%s: host/call operation not catalogued", where)
			}
			continue
		}
		m := findMethod(harn.Methods, e.Method, to)
		if m == nil {
			m = findMethod(acp.Methods, e.Method, acpSide[to])
		}
		if m == nil {
			t.Errorf("%s (%s): in no catalogue", where, e.Direction)
			continue
		}
		switch retired := strings.HasPrefix(e.Status, "retired"); {
		case retired && m.Status != "retired":
			t.Errorf("%s: retired in the reference, %s here", where, m.Status)
		case !retired && m.Status == "retired":
			t.Errorf("%s: retired here but not in the reference (%q)", where, e.Status)
		case strings.HasPrefix(e.Status, "legacy") && m.Status != "legacy-tolerated" && m.Status != "retired":
			t.Errorf("%s: legacy in the reference (%q), %s here", where, e.Status, m.Status)
		}
	}
}

// agentEventKinds are the kinds of the generated agent event union: those
// that decode into a variant.
func isTypedKind(kind string) bool {
	var e harn.AgentEvent
	err := json.Unmarshal([]byte(`{"sessionId":"s","kind":"`+kind+`"}`), &e)
	return err != nil || e.Unknown == nil
}

// hasMember reports whether the open struct v names member as a typed field:
// some value of it decodes without landing in Extra.
func hasMember(newV func() any, member string) bool {
	for _, val := range []string{`"x"`, `1`, `true`, `{}`, `[]`, `{"kind":"mcp_server","serverName":"s"}`, `{"source":"s"}`, `{"kind":"natural","reason":"r","owner":"agent"}`} {
		v := newV()
		if json.Unmarshal([]byte(`{"`+member+`":`+val+`}`), v) != nil {
			continue
		}
		extra, _ := reflect.ValueOf(v).Elem().FieldByName("Extra").Interface().(wire.Extras)
		if _, kept := extra.Get(member); !kept {
			return true
		}
	}
	return false
}

func TestManifestVocabulariesAreTyped(t *testing.T) {
	data := readShared(t, upstreamDir+"/spec/protocol-artifacts/manifest.json")
	var m struct {
		ACP map[string]stdjson.RawMessage `json:"acp"`
	}
	if err := stdjson.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	list := func(key string) []string {
		var out []string
		if err := stdjson.Unmarshal(m.ACP[key], &out); err != nil || len(out) == 0 {
			t.Fatalf("manifest acp.%s: %v", key, err)
		}
		return out
	}
	for _, v := range append(list("sessionUpdateVariants"), list("harnSessionUpdateExtensions")...) {
		if !isTypedVariant(v) {
			t.Errorf("session/update variant %q is not typed", v)
		}
	}
	for _, k := range list("harnAgentEventKinds") {
		if !isTypedKind(k) {
			t.Errorf("_harn/agentEvent kind %q is not typed", k)
		}
	}
	for key, newV := range map[string]func() any{
		"toolLifecycleExtensionFields": func() any { return new(acp.HarnToolLifecycle) },
		"contentExtensionFields":       func() any { return new(acp.HarnContent) },
		"promptResultExtensionFields":  func() any { return new(acp.HarnPromptResult) },
	} {
		for _, f := range list(key) {
			if !hasMember(newV, f) {
				t.Errorf("%s: %q is not a typed member of %T", key, f, newV())
			}
		}
	}
	enums := map[string]func(string) bool{
		"workerStatuses":             func(s string) bool { return acp.HarnWorkerUpdateStatus(s).Known() },
		"toolCallErrorCategories":    func(s string) bool { return acp.ToolErrorCategory(s).Known() },
		"toolExecutorSimpleValues":   func(s string) bool { return acp.ToolExecutorName(s).Known() },
		"toolMutationStatuses":       func(s string) bool { return acp.MutationStatus(s).Known() },
		"promptErrorTerminalClasses": func(s string) bool { return acp.PromptErrorDataTerminalClass(s).Known() },
	}
	for key, known := range enums {
		for _, v := range list(key) {
			if !known(v) {
				t.Errorf("%s: %q is no named value", key, v)
			}
		}
	}
	// Every method the manifest lists is catalogued in its direction.
	for key, to := range map[string]string{"agentMethods": "vm", "dispatchedMethods": "vm", "handledMethods": "vm", "clientMethods": "host", "agentNotifications": "host"} {
		for _, w := range list(key) {
			if findMethod(harn.Methods, w, to) == nil && findMethod(acp.Methods, w, acpSide[to]) == nil {
				t.Errorf("manifest acp.%s: %s is in no catalogue", key, w)
			}
		}
	}
}
