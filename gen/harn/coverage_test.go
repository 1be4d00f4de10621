package harn_test

import (
	stdjson "encoding/json"
	"fmt"
	"maps"
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
// covered: each entry is in this package's catalogue, ACP's or the
// external-agent one, exactly: its wire name with its casing, its
// direction, every kind it may be sent as (a request, a notification or
// both, over the catalogues of the stream), and a status that says what
// the reference says: current entries have a peer method (a status of
// stable or experimental, and the generated peer has the method), legacy
// ones are legacy-tolerated (served, never sent), retired ones retired.
// Each session/update variant and agent event kind is a typed variant;
// each listed extension field is a typed member.

const referenceCatalogue = "../../../shared/reference/harn/catalogue.json"

// notCatalogued lists reference entries with no catalogue entry, and why.
var notCatalogued = map[string]string{
	"harnHostCall": "the DAP adapter's reverse request (harn-dap, Content-Length framed DAP, not JSON-RPC): another protocol than the stdio bridge",
}

// moreKinds lists entries whose reference kind understates what the
// reference itself says they are accepted as (in the entry's own errors
// and notes): the kinds catalogued, and why.
var moreKinds = map[string]struct{ kinds, why string }{
	"session/remind": {"request|notification", "the entry's errors say 'as a notification: errors are silent' and its notes that the bridge reader accepts it as a notification; catalogue.md lists the host->VM notification form"},
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

// isTypedVariant reports whether a session/update tag is a typed variant,
// of ACP's (gen/acp) or Harn's (gen/harn, harn.UpdateOf): an object with
// only the tag either decodes into a variant field or fails for a missing
// member of that variant; a tag neither knows lands in Unknown.
func isTypedVariant(tag string) bool {
	doc := []byte(`{"sessionUpdate":"` + tag + `"}`)
	var u acp.SessionUpdate
	if err := json.Unmarshal(doc, &u); err != nil || u.Unknown == nil {
		return true
	}
	var h harn.SessionUpdate
	err := json.Unmarshal(doc, &h)
	return err != nil || h.Unknown == nil
}

// refEntry is one entry of the reference catalogue.
type refEntry struct {
	Method, Direction, Kind, Status, Operation, Variant, Notes string
	Errors                                                     []string
}

func (e refEntry) where() string {
	w := e.Method
	if e.Operation != "" {
		w += " " + e.Operation
	}
	if e.Variant != "" {
		w += " " + e.Variant
	}
	return w
}

// refStatus reads a reference status: retired, legacy or current (the
// reference's null, "current", and notes such as "mirror; ...").
func refStatus(s string) string {
	switch {
	case strings.HasPrefix(s, "retired"):
		return "retired"
	case strings.HasPrefix(s, "legacy"):
		return "legacy"
	}
	return "current"
}

// peerHas reports whether the generated peer type has a method named name.
func peerHas(peer any, name string) bool {
	_, ok := reflect.TypeOf(peer).MethodByName(name)
	return ok
}

// statusProblem says how status and the peer methods of a catalogued method
// or operation (named goName; peer is the peer that sends it) miss what the
// reference's status says, or "".
func statusProblem(ref, status string, peer any, goName string) string {
	has := peerHas(peer, goName)
	switch want := refStatus(ref); {
	case want == "retired" && status != "retired":
		return "retired in the reference, " + status + " here"
	case want != "retired" && status == "retired":
		return fmt.Sprintf("retired here, %q in the reference", ref)
	case want == "legacy" && status != "legacy-tolerated":
		return fmt.Sprintf("legacy in the reference (%q), %s here", ref, status)
	case want == "current" && status != "stable" && status != "experimental":
		return fmt.Sprintf("current in the reference, %s here: no peer method", status)
	case want == "current" && !has:
		return fmt.Sprintf("current in the reference, but %T has no method %s", peer, goName)
	case want != "current" && has:
		return fmt.Sprintf("%s in the reference, but %T has a method %s", want, peer, goName)
	}
	return ""
}

// peers returns the peers that send methods to side to: this package's and ACP's.
func peers(to string) (bridge, acpPeer any) {
	if to == "vm" {
		return &harn.VMPeer{}, &acp.AgentPeer{}
	}
	return &harn.HostPeer{}, &acp.ClientPeer{}
}

// kindSet is the set of frame kinds a method may be sent as.
func kindSet(kind string) map[string]bool {
	switch kind {
	case "request_or_notification":
		return map[string]bool{"request": true, "notification": true}
	}
	out := map[string]bool{}
	for _, k := range strings.Split(kind, "|") {
		out[k] = true
	}
	return out
}

// coverageProblems checks one reference entry of all and says how the
// catalogues miss it; nil when it is exact. A method the reference lists
// more than once in one direction (terminal/output: a request and a
// notification) is all of those kinds.
func coverageProblems(e refEntry, all []refEntry) []string {
	var out []string
	if strings.Contains(e.Direction, "A2A") {
		m := findMethod(externalagent.Methods, e.Method, "agent")
		switch {
		case m == nil:
			return []string{"not in the external-agent catalogue"}
		case m.Kind != e.Kind:
			out = append(out, fmt.Sprintf("kind %s, %s in the reference", m.Kind, e.Kind))
		}
		if p := statusProblem(e.Status, m.Status, &externalagent.AgentPeer{}, m.Go); p != "" {
			out = append(out, p)
		}
		return out
	}
	var to string
	switch {
	case strings.HasPrefix(e.Direction, "vm->host"):
		to = "host"
	case strings.HasPrefix(e.Direction, "host->vm"):
		to = "vm"
	default:
		return []string{fmt.Sprintf("unknown direction %q", e.Direction)}
	}
	switch {
	case e.Variant != "":
		if e.Method != acp.MethodSessionUpdate || to != "host" {
			return []string{"a variant of another method than session/update to the host"}
		}
		if !isTypedVariant(e.Variant) {
			return []string{fmt.Sprintf("session/update variant %q is not typed", e.Variant)}
		}
		return nil
	case e.Operation != "":
		m := findMethod(harn.Methods, harn.MethodHostCall, "host")
		i := slices.IndexFunc(m.Operations, func(o wire.OperationInfo) bool { return o.Match[0] == e.Operation })
		if i < 0 {
			return []string{"host/call operation not catalogued"}
		}
		if p := statusProblem(e.Status, m.Operations[i].Status, &harn.HostPeer{}, m.Operations[i].Go); p != "" {
			out = append(out, p)
		}
		return out
	}
	// The method: every catalogued method of that wire name (exact, with
	// its casing) in that direction, over both catalogues of the stream.
	bridgePeer, acpPeer := peers(to)
	type found struct {
		m    wire.MethodInfo
		peer any
	}
	var ms []found
	for _, m := range harn.Methods {
		if m.Wire == e.Method && m.To == to {
			ms = append(ms, found{m, bridgePeer})
		} else if strings.EqualFold(m.Wire, e.Method) && m.To == to {
			out = append(out, fmt.Sprintf("catalogued as %q: the casing differs", m.Wire))
		}
	}
	for _, m := range acp.Methods {
		if m.Wire == e.Method && m.To == acpSide[to] {
			ms = append(ms, found{m, acpPeer})
		} else if strings.EqualFold(m.Wire, e.Method) && m.To == acpSide[to] {
			out = append(out, fmt.Sprintf("catalogued as %q: the casing differs", m.Wire))
		}
	}
	if len(ms) == 0 {
		return append(out, fmt.Sprintf("(%s) in no catalogue", e.Direction))
	}
	// The kinds of this entry must be catalogued, and no kind that no
	// entry of the method lists.
	own := kindSet(e.Kind)
	if k, ok := moreKinds[e.Method]; ok {
		own = kindSet(k.kinds)
	}
	kinds := maps.Clone(own)
	for _, o := range all {
		if o.Method == e.Method && o.Direction == e.Direction && o.Operation == "" && o.Variant == "" {
			maps.Copy(kinds, kindSet(o.Kind))
		}
	}
	got := map[string]bool{}
	for _, f := range ms {
		maps.Copy(got, kindSet(f.m.Kind))
	}
	for _, k := range slices.Sorted(maps.Keys(own)) {
		if !got[k] {
			out = append(out, fmt.Sprintf("sent as %v here, never as a %s", slices.Sorted(maps.Keys(got)), k))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(got)) {
		if !kinds[k] {
			out = append(out, fmt.Sprintf("sent as a %s here, which the reference does not list", k))
		}
	}
	// Each kind of this entry needs a method of that kind with the entry's
	// status.
	for _, k := range slices.Sorted(maps.Keys(own)) {
		var problems []string
		ok := false
		for _, f := range ms {
			if !kindSet(f.m.Kind)[k] {
				continue
			}
			if p := statusProblem(e.Status, f.m.Status, f.peer, f.m.Go); p != "" {
				problems = append(problems, fmt.Sprintf("%s (%s)", p, f.m.Go))
			} else {
				ok = true
			}
		}
		if !ok && len(problems) > 0 {
			out = append(out, "as a "+k+": "+strings.Join(problems, "; "))
		}
	}
	return out
}

func readReference(t *testing.T) []refEntry {
	t.Helper()
	var entries []refEntry
	if err := stdjson.Unmarshal(readShared(t, referenceCatalogue), &entries); err != nil {
		t.Fatal(err)
	}
	return entries
}

func TestReferenceCatalogueCovered(t *testing.T) {
	entries := readReference(t)
	exact := 0
	for _, e := range entries {
		if reason, ok := notCatalogued[e.Method]; ok {
			t.Logf("%s: not catalogued: %s", e.where(), reason)
			continue
		}
		problems := coverageProblems(e, entries)
		for _, p := range problems {
			t.Errorf("%s [%s; %s]: %s", e.where(), e.Direction, e.Kind, p)
		}
		if len(problems) == 0 {
			exact++
		}
	}
	t.Logf("%d of %d reference entries exact (%d not catalogued)", exact, len(entries), len(notCatalogued))
}

// The exceptions stay true to the reference: an entry whose kind is widened
// says so itself.
func TestReferenceCoverageExceptions(t *testing.T) {
	entries := readReference(t)
	for name := range moreKinds {
		i := slices.IndexFunc(entries, func(e refEntry) bool { return e.Method == name && e.Operation == "" && e.Variant == "" })
		if i < 0 {
			t.Errorf("moreKinds: %s is no reference entry", name)
			continue
		}
		if text := entries[i].Notes + " " + strings.Join(entries[i].Errors, " "); !strings.Contains(text, "notification") {
			t.Errorf("moreKinds: the reference entry of %s does not mention a notification: %q", name, text)
		}
	}
	for name := range notCatalogued {
		if !slices.ContainsFunc(entries, func(e refEntry) bool { return e.Method == name }) {
			t.Errorf("notCatalogued: %s is no reference entry", name)
		}
	}
}

// The check itself catches what it is for: a kind that is missing, a
// status without a peer method, a casing that differs.
func TestCoverageCheckCatches(t *testing.T) {
	for _, c := range []struct {
		e    refEntry
		want string
	}{
		{refEntry{Method: "session/prompt", Direction: "host->vm (client->agent)", Kind: "notification"}, "sent as [request] here, never as a notification"},
		{refEntry{Method: "llm_call", Direction: "vm->host (agent->client)", Kind: "request"}, "current in the reference, legacy-tolerated here: no peer method"},
		{refEntry{Method: "host/capabilities", Direction: "vm->host (agent->client)", Kind: "request", Status: "legacy"}, "legacy in the reference"},
		{refEntry{Method: "Host/Capabilities", Direction: "vm->host (agent->client)", Kind: "request"}, "the casing differs"},
		{refEntry{Method: "host/capabilities", Direction: "host->vm (client->agent)", Kind: "request"}, "in no catalogue"},
		{refEntry{Method: "host/call", Operation: "process.list_shells", Direction: "vm->host (agent->client)", Kind: "request", Status: "retired"}, "retired in the reference"},
	} {
		got := strings.Join(coverageProblems(c.e, []refEntry{c.e}), "; ")
		if !strings.Contains(got, c.want) {
			t.Errorf("%s %s (%s): problems %q, want %q", c.e.Method, c.e.Operation, c.e.Kind, got, c.want)
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
		"toolLifecycleExtensionFields": func() any { return new(harn.ToolLifecycle) },
		"contentExtensionFields":       func() any { return new(harn.ContentFields) },
		"promptResultExtensionFields":  func() any { return new(harn.PromptResult) },
	} {
		for _, f := range list(key) {
			if !hasMember(newV, f) {
				t.Errorf("%s: %q is not a typed member of %T", key, f, newV())
			}
		}
	}
	enums := map[string]func(string) bool{
		"workerStatuses":             func(s string) bool { return harn.WorkerLifecycleStatus(s).Known() },
		"toolCallErrorCategories":    func(s string) bool { return harn.ToolErrorCategory(s).Known() },
		"toolExecutorSimpleValues":   func(s string) bool { return harn.ToolExecutorName(s).Known() },
		"toolMutationStatuses":       func(s string) bool { return harn.MutationStatus(s).Known() },
		"promptErrorTerminalClasses": func(s string) bool { return harn.PromptErrorDataTerminalClass(s).Known() },
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
