// Package catalogue reads bridgekit's method catalogues: the data files under
// spec/catalogue/ that say, per protocol, which methods exist, who sends them,
// what their params and results are (as JSON Schema references), which errors
// they document and how stable they are. docs/catalogue.md describes the format.
package catalogue

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
)

// Catalogue is one protocol's method catalogue.
type Catalogue struct {
	Protocol string   `json:"protocol"`
	Title    string   `json:"title"`
	Doc      string   `json:"doc,omitempty"`
	Package  string   `json:"package"`
	Framing  string   `json:"framing"`
	Envelope string   `json:"envelope,omitempty"`
	Sides    []Side   `json:"sides"`
	Schemas  []string `json:"schemas"`
	Methods  []Method `json:"methods"`

	// File is the path the catalogue was read from (not part of the format).
	File string `json:"-"`
}

// Side is one peer of the protocol.
type Side struct {
	Name string `json:"name"`
	Go   string `json:"go"`
	Doc  string `json:"doc,omitempty"`
}

// Method is one wire method.
type Method struct {
	Wire string `json:"wire"`
	Go   string `json:"go"`
	// Qualifier holds further envelope members that, with Wire, identify the
	// method (agentpm-service: {"service": "knowledge"}).
	Qualifier  map[string]string `json:"qualifier,omitempty"`
	From       string            `json:"from"`
	To         string            `json:"to"`
	Kind       string            `json:"kind"`
	Params     *string           `json:"params"`
	Result     *string           `json:"result"`
	Errors     []Error           `json:"errors"`
	Status     string            `json:"status"`
	Source     string            `json:"source,omitempty"`
	Doc        string            `json:"doc"`
	Operations *Operations       `json:"operations,omitempty"`
}

// Operations describes operations carried inside one method and selected by
// members of its params (host/call selects by name; AgentPM host_service by
// role and method).
type Operations struct {
	Selector []string    `json:"selector"`
	Payload  string      `json:"payload"`
	Items    []Operation `json:"items"`
}

// Operation is one operation carried inside a method.
type Operation struct {
	Match     map[string]string `json:"match"`
	Go        string            `json:"go"`
	Advertise *Advertise        `json:"advertise,omitempty"`
	Args      *string           `json:"args"`
	Result    *string           `json:"result"`
	Errors    []Error           `json:"errors"`
	Status    string            `json:"status"`
	Source    string            `json:"source,omitempty"`
	Doc       string            `json:"doc"`
}

// Advertise says how an operation is listed by a capability query.
type Advertise struct {
	Capability string `json:"capability"`
	Op         string `json:"op"`
}

// Error is one documented error: a JSON-RPC integer code or a string code.
type Error struct {
	Code json.RawMessage `json:"code"`
	When string          `json:"when"`
}

// Kinds, statuses, framings and directions the format allows.
var (
	Kinds    = []string{"request", "notification", "request_or_notification", "event", "response"}
	Statuses = []string{"stable", "experimental", "legacy-tolerated", "retired"}
	Framings = []string{"jsonrpc2-ndjson", "envelope-ndjson", "stdout-json"}
)

// Load reads and validates a catalogue file. Unknown members are errors.
func Load(path string) (*Catalogue, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	c, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	c.File = path
	return c, nil
}

// Parse decodes and validates catalogue JSON.
func Parse(data []byte) (*Catalogue, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var c Catalogue
	if err := dec.Decode(&c); err != nil {
		return nil, err
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return &c, nil
}

var (
	goIdent  = regexp.MustCompile(`^[A-Z][A-Za-z0-9]*$`)
	goPkg    = regexp.MustCompile(`^[a-z][a-z0-9]*$`)
	schemaID = regexp.MustCompile(`^[A-Za-z0-9._-]+\.schema\.json#/\$defs/[A-Za-z0-9_]+$`)
)

// Validate checks the catalogue's internal consistency.
func (c *Catalogue) Validate() error {
	var errs []string
	bad := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	if c.Protocol == "" {
		bad("protocol is empty")
	}
	if !goPkg.MatchString(c.Package) {
		bad("package %q is not a lower-case Go package name", c.Package)
	}
	if !slices.Contains(Framings, c.Framing) {
		bad("framing %q is not one of %v", c.Framing, Framings)
	}
	sides := map[string]bool{}
	for _, s := range c.Sides {
		if s.Name == "" || !goIdent.MatchString(s.Go) {
			bad("side %q: needs a name and an exported Go name", s.Name)
		}
		sides[s.Name] = true
	}
	if len(c.Sides) != 2 {
		bad("a protocol has exactly two sides, got %d", len(c.Sides))
	}
	checkRef := func(where string, ref *string) {
		if ref != nil && !schemaID.MatchString(*ref) {
			bad("%s: %q is not <file>.schema.json#/$defs/<name>", where, *ref)
		}
		if ref != nil {
			file, _, _ := strings.Cut(*ref, "#")
			if !slices.Contains(c.Schemas, file) {
				bad("%s: schema file %q is not listed in schemas", where, file)
			}
		}
	}
	checkErrors := func(where string, es []Error) {
		for _, e := range es {
			var n int64
			var s string
			if json.Unmarshal(e.Code, &n) != nil && (json.Unmarshal(e.Code, &s) != nil || s == "") {
				bad("%s: error code %s is neither an integer nor a string", where, e.Code)
			}
		}
	}
	seen := map[string]bool{}
	goNames := map[string]string{}
	for i, m := range c.Methods {
		where := fmt.Sprintf("methods[%d] %s", i, m.Wire)
		key := m.Wire + qualifierKey(m.Qualifier) + "|" + m.From + ">" + m.To
		if m.Wire == "" || seen[key] {
			bad("%s: empty or duplicate wire name for this direction", where)
		}
		seen[key] = true
		if !goIdent.MatchString(m.Go) {
			bad("%s: Go name %q is not exported", where, m.Go)
		}
		if prev, ok := goNames[m.Go]; ok {
			bad("%s: Go name %q already used by %s", where, m.Go, prev)
		}
		goNames[m.Go] = m.Wire
		if !sides[m.From] || !sides[m.To] || m.From == m.To {
			bad("%s: from %q to %q must name the two different sides", where, m.From, m.To)
		}
		if !slices.Contains(Kinds, m.Kind) {
			bad("%s: kind %q is not one of %v", where, m.Kind, Kinds)
		}
		if !slices.Contains(Statuses, m.Status) {
			bad("%s: status %q is not one of %v", where, m.Status, Statuses)
		}
		if m.Kind == "notification" && m.Result != nil {
			bad("%s: a notification has no result", where)
		}
		checkRef(where+" params", m.Params)
		checkRef(where+" result", m.Result)
		checkErrors(where, m.Errors)
		if ops := m.Operations; ops != nil {
			if len(ops.Selector) == 0 || ops.Payload == "" {
				bad("%s: operations need a selector and a payload member", where)
			}
			matches := map[string]bool{}
			for j, op := range ops.Items {
				ow := fmt.Sprintf("%s operations[%d]", where, j)
				if len(op.Match) != len(ops.Selector) {
					bad("%s: match must give exactly the selector members %v", ow, ops.Selector)
				}
				for _, s := range ops.Selector {
					if op.Match[s] == "" {
						bad("%s: match lacks selector member %q", ow, s)
					}
				}
				mk := qualifierKey(op.Match)
				if matches[mk] {
					bad("%s: duplicate match %v", ow, op.Match)
				}
				matches[mk] = true
				if !goIdent.MatchString(op.Go) {
					bad("%s: Go name %q is not exported", ow, op.Go)
				}
				if prev, ok := goNames[op.Go]; ok {
					bad("%s: Go name %q already used by %s", ow, op.Go, prev)
				}
				goNames[op.Go] = mk
				if !slices.Contains(Statuses, op.Status) {
					bad("%s: status %q is not one of %v", ow, op.Status, Statuses)
				}
				if op.Advertise != nil && (op.Advertise.Capability == "" || op.Advertise.Op == "") {
					bad("%s: advertise needs capability and op", ow)
				}
				checkRef(ow+" args", op.Args)
				checkRef(ow+" result", op.Result)
				checkErrors(ow, op.Errors)
			}
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("invalid catalogue:\n  %s", strings.Join(errs, "\n  "))
	}
	return nil
}

// Side returns the side called name.
func (c *Catalogue) Side(name string) Side {
	for _, s := range c.Sides {
		if s.Name == name {
			return s
		}
	}
	return Side{}
}

// qualifierKey renders a string map deterministically.
func qualifierKey(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "|%s=%s", k, m[k])
	}
	return b.String()
}
