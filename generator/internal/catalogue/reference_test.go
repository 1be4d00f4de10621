package catalogue

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The catalogue format must carry every method of the reference catalogues in
// ../shared/reference without changing shape. This test converts each entry
// into the format (schemas become $defs of synthetic schema files), then
// parses and validates the result with the same code the generator uses.

const shared = "../../../../shared/reference"

type refEntry struct {
	Method    string          `json:"method"`
	Direction string          `json:"direction"`
	Kind      string          `json:"kind"`
	Role      string          `json:"role"`
	Params    json.RawMessage `json:"params"`
	Payload   json.RawMessage `json:"payload"`
	Result    json.RawMessage `json:"result"`
	Errors    []any           `json:"errors"`
	Status    string          `json:"status"`
	Operation string          `json:"operation"`
	FrameMeth string          `json:"frame_method"`
	Transport string          `json:"transport"`
	Notes     string          `json:"notes"`
	Docs      string          `json:"docs"`
	Source    string          `json:"source"`
}

func loadRef(t *testing.T, name string) []refEntry {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(shared, name))
	if err != nil {
		if os.Getenv("CI") != "" { // .ci/run always lays shared/ beside the checkout
			t.Fatalf("reference material missing in CI: %v", err)
		}
		t.Skipf("reference material not present: %v", err)
	}
	var es []refEntry
	if err := json.Unmarshal(data, &es); err != nil {
		t.Fatal(err)
	}
	return es
}

func status(s string) string {
	switch {
	case s == "" || s == "current":
		return "stable"
	case strings.HasPrefix(s, "retired"):
		return "retired"
	default:
		return "legacy-tolerated"
	}
}

func kind(k string) string {
	switch k {
	case "request|notification":
		return "request_or_notification"
	case "initialize":
		return "request"
	}
	return k
}

// builder accumulates one synthetic catalogue.
type builder struct {
	cat    Catalogue
	defs   map[string]json.RawMessage
	byKey  map[string]int
	goUsed map[string]int
}

func newBuilder(protocol, framing string, sides ...string) *builder {
	b := &builder{defs: map[string]json.RawMessage{}, byKey: map[string]int{}, goUsed: map[string]int{}}
	b.cat = Catalogue{Protocol: protocol, Title: protocol, Package: "x", Framing: framing, Schemas: []string{"ref.schema.json"}}
	for _, s := range sides {
		b.cat.Sides = append(b.cat.Sides, Side{Name: s, Go: strings.ToUpper(s[:1]) + s[1:]})
	}
	return b
}

func (b *builder) def(schema json.RawMessage) *string {
	if len(schema) == 0 || string(schema) == "null" {
		return nil
	}
	name := fmt.Sprintf("d%d", len(b.defs))
	b.defs[name] = schema
	ref := "ref.schema.json#/$defs/" + name
	return &ref
}

func (b *builder) goName(wire string) string {
	var sb strings.Builder
	for _, w := range strings.FieldsFunc(wire, func(r rune) bool { return r == '/' || r == '_' || r == '.' || r == '-' || r == ':' }) {
		sb.WriteString(strings.ToUpper(w[:1]) + w[1:])
	}
	n := sb.String()
	if n == "" || n[0] < 'A' || n[0] > 'Z' {
		n = "X" + n
	}
	b.goUsed[n]++
	if c := b.goUsed[n]; c > 1 {
		n = fmt.Sprintf("%s%d", n, c)
	}
	return n
}

func errs(list []any) []Error {
	var out []Error
	for _, e := range list {
		code, _ := json.Marshal(-32000)
		when := fmt.Sprint(e)
		if s, ok := e.(string); ok && !strings.Contains(s, " ") {
			code, _ = json.Marshal(s) // AgentPM string codes
		}
		out = append(out, Error{Code: code, When: when})
	}
	return out
}

func (b *builder) method(wire, from, to string, e refEntry, params json.RawMessage, qual map[string]string) *Method {
	key := wire + "|" + from + ">" + to + fmt.Sprint(qual)
	if i, ok := b.byKey[key]; ok {
		return &b.cat.Methods[i]
	}
	b.byKey[key] = len(b.cat.Methods)
	b.cat.Methods = append(b.cat.Methods, Method{
		Wire: wire, Go: b.goName(wire + fmt.Sprint(qual["service"])), Qualifier: qual, From: from, To: to,
		Kind: kind(e.Kind), Params: b.def(params), Result: b.def(e.Result), Errors: errs(e.Errors),
		Status: status(e.Status), Source: e.Source, Doc: e.Notes,
	})
	m := &b.cat.Methods[len(b.cat.Methods)-1]
	if m.Kind == "notification" || m.Kind == "event" {
		m.Result = nil
	}
	return m
}

func (b *builder) check(t *testing.T) int {
	t.Helper()
	data, err := json.Marshal(b.cat)
	if err != nil {
		t.Fatal(err)
	}
	c, err := Parse(data)
	if err != nil {
		t.Fatalf("%s does not fit the catalogue format: %v", b.cat.Protocol, err)
	}
	n := len(c.Methods)
	for _, m := range c.Methods {
		if m.Operations != nil {
			n += len(m.Operations.Items)
		}
	}
	return n
}

func TestFormatCarriesHarnReference(t *testing.T) {
	entries := loadRef(t, "harn/catalogue.json")
	// One catalogue per protocol family: the stdio bridge (host/vm), Harn's A2A
	// client, and the DAP reverse request.
	bridge := newBuilder("harn-bridge", "jsonrpc2-ndjson", "host", "vm")
	a2a := newBuilder("harn-a2a", "jsonrpc2-ndjson", "harn", "peer")
	dap := newBuilder("harn-dap", "stdout-json", "adapter", "client")
	carried := 0
	for _, e := range entries {
		var b *builder
		var from, to string
		switch {
		case strings.HasPrefix(e.Direction, "vm->host"):
			b, from, to = bridge, "vm", "host"
		case strings.HasPrefix(e.Direction, "host->vm"):
			b, from, to = bridge, "host", "vm"
		case strings.Contains(e.Direction, "A2A"):
			b, from, to = a2a, "harn", "peer"
		case strings.Contains(e.Direction, "debug adapter"):
			b, from, to = dap, "adapter", "client"
		default:
			t.Fatalf("%s: unmapped direction %q", e.Method, e.Direction)
		}
		if e.Operation == "" {
			b.method(e.Method, from, to, e, e.Params, nil)
			carried++
			continue
		}
		// host/call operations: the generic entry is the method, each named op an operation.
		m := b.method(e.Method, from, to, refEntry{Kind: "request", Status: "current"}, json.RawMessage(`{"type":"object"}`), nil)
		if m.Operations == nil {
			m.Operations = &Operations{Selector: []string{"name"}, Payload: "args"}
		}
		capability, op, _ := strings.Cut(e.Operation, ".")
		m.Operations.Items = append(m.Operations.Items, Operation{
			Match: map[string]string{"name": e.Operation}, Go: b.goName(e.Operation),
			Advertise: &Advertise{Capability: capability, Op: op},
			Args:      b.def(e.Params), Result: b.def(e.Result), Errors: errs(e.Errors), Status: status(e.Status), Doc: e.Notes,
		})
		carried++
	}
	total := bridge.check(t) + a2a.check(t) + dap.check(t)
	if carried != len(entries) {
		t.Fatalf("carried %d of %d entries", carried, len(entries))
	}
	t.Logf("%d reference entries carried as %d methods and operations", len(entries), total)
}

func TestFormatCarriesAgentPMMachineReference(t *testing.T) {
	entries := loadRef(t, "agentpm/machine.json")
	b := newBuilder("agentpm-harness-machine", "envelope-ndjson", "client", "harness")
	carried := 0
	for _, e := range entries {
		if strings.HasPrefix(e.Method, "(") {
			// (envelope), (response), (error), (unknown method) describe framing, not methods.
			continue
		}
		from, to, _ := strings.Cut(e.Direction, "->")
		if e.FrameMeth == "" {
			b.method(e.Method, from, to, e, e.Payload, nil)
			carried++
			continue
		}
		m := b.method(e.FrameMeth, from, to, refEntry{Kind: "request"}, json.RawMessage(`{"type":"object"}`), nil)
		if m.Operations == nil {
			m.Operations = &Operations{Selector: []string{"role", "method"}, Payload: "payload"}
		}
		role, method, _ := strings.Cut(strings.TrimPrefix(e.Method, e.FrameMeth+":"), "/")
		m.Operations.Items = append(m.Operations.Items, Operation{
			Match: map[string]string{"role": role, "method": method}, Go: b.goName(e.Method),
			Args: b.def(e.Payload), Result: b.def(e.Result), Errors: errs(e.Errors), Status: "stable", Doc: e.Notes,
		})
		carried++
	}
	b.check(t)
	t.Logf("%d machine methods and operations carried", carried)
}

func TestFormatCarriesAgentPMServiceReference(t *testing.T) {
	entries := loadRef(t, "agentpm/service.json")
	b := newBuilder("agentpm-service", "envelope-ndjson", "harness", "service")
	carried := 0
	for _, e := range entries {
		if strings.HasPrefix(e.Method, "(") {
			continue
		}
		from, to, _ := strings.Cut(e.Direction, "->")
		// A method is identified by its name together with the envelope's service member.
		b.method(e.Method, from, to, e, e.Payload, map[string]string{"service": e.Role})
		carried++
	}
	b.check(t)
	if carried == 0 {
		t.Fatal("no service methods")
	}
}
