// Package catalogue reads bridgekit's method catalogues: the data files under
// spec/catalogue/ that say, per protocol, which methods exist, who sends them,
// what their params and results are (as JSON Schema references), which errors
// they document and how stable they are. docs/catalogue.md describes the format.
package catalogue

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	pathpkg "path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// Catalogue is one protocol's method catalogue.
type Catalogue struct {
	// Protocol identifies the protocol, e.g. harn-bridge.
	Protocol string `json:"protocol"`
	// Title and Doc are the protocol's human name and summary.
	Title string `json:"title"`
	Doc   string `json:"doc,omitempty"`
	// Package is the Go package name under gen/.
	Package string `json:"package"`
	// Extends, when set, makes this catalogue another's with further
	// members and some of its schema files replaced (below, and
	// docs/catalogue.md): the base's framing, envelope and sides, which an
	// extension does not give, and its schemas, derivation, annotations,
	// overlays, errors and methods, each followed by the extension's own.
	Extends *Extends `json:"extends,omitempty"`
	// Framing says how messages travel.
	Framing Framing `json:"framing,omitempty"`
	// Envelope gives, for the envelope-ndjson framing, the protocol string and
	// version every frame carries.
	Envelope *Envelope `json:"envelope,omitempty"`
	// Sides are the protocol's two peers.
	Sides []Side `json:"sides,omitempty"`
	// Schemas are the files under spec/schemas whose $defs make up the
	// package's types.
	Schemas []string `json:"schemas,omitempty"`
	// Imports names other catalogues, by their package, whose types this
	// one uses instead of generating copies: a $ref into one of their schema
	// files (or those of the catalogues they import in turn) is their
	// generated type (acp.ContentBlock, from <module>/gen/acp), with the
	// shape their overlays give it. Methods and operations may use the files
	// of the catalogues listed here. Imports form no cycle.
	Imports []string `json:"imports,omitempty"`
	// Derive, when set, derives methods from a schema's x-method/x-side
	// annotations; they come before the listed Methods.
	Derive *Derive `json:"derive,omitempty"`
	// Annotations add to derived methods, keyed by wire name.
	Annotations map[string]Annotation `json:"annotations,omitempty"`
	// Overlays extend vendored definitions with schemas of ours: they retype
	// a member, forbid members or add variants to a union.
	Overlays []Overlay `json:"overlays,omitempty"`
	// Errors are the errors any method can get (a frame that fails the
	// protocol's gates, an unknown method), documented once for all.
	Errors []Error `json:"errors,omitempty"`
	// Methods are the methods listed by hand, in the order docs list them.
	Methods []Method `json:"methods"`

	// File is the path the catalogue was read from (not part of the format).
	File string `json:"-"`
	// Written is, for a catalogue that extends another, the catalogue as its
	// file says it, before the base was merged in (not part of the format):
	// what bridgekit-gen fmt writes back.
	Written *Catalogue `json:"-"`
	// Base is, for a catalogue that extends another, the base as its file
	// says it (not part of the format).
	Base *Catalogue `json:"-"`
}

// Extends names the catalogue another one extends. The extension is the base
// with every reference into a file of Rebase read as one into the file it
// maps to (the base's $defs entries of that name in the other file), then
// the extension's own members added: its schemas, imports, overlays, errors
// and methods after the base's, its annotations beside the base's (a wire
// name annotated by both fails), Unrouted beside the derivation's. Its
// protocol, title, doc and package are its own; framing, envelope and sides
// are the base's and an extension gives none. A base extends no other.
type Extends struct {
	// Catalogue is the base's file name, in the same directory.
	Catalogue string `json:"catalogue"`
	// Rebase maps schema files the base lists to the files this catalogue
	// reads in their place (acp/v1/schema.json to its unstable superset).
	// A $ref into a mapped file, from any schema file of the package, and a
	// spec/overrides.json entry of a mapped file apply to the file it maps to.
	Rebase map[string]string `json:"rebase,omitempty"`
	// Unrouted adds entries to the base derivation's unrouted list: annotated
	// definitions of the rebased schema that its routing definitions do not
	// list, each with the reason it derives no method.
	Unrouted map[string]string `json:"unrouted,omitempty"`
	// Status, when set, is the status of every derived method the base does
	// not derive (experimental for ACP's unstable methods), unless an
	// annotation gives one.
	Status Status `json:"status,omitempty"`
	// Reason says why the package is apart from the base's.
	Reason string `json:"reason"`
}

// Framing is how a protocol's messages travel.
type Framing string

// Framings the format allows.
const (
	JSONRPC2NDJSON Framing = "jsonrpc2-ndjson" // JSON-RPC 2.0, one object per line
	EnvelopeNDJSON Framing = "envelope-ndjson" // AgentPM's {protocol, version, kind, id, ...} frames
	StdoutJSON     Framing = "stdout-json"     // one JSON document on stdout
	JSONRPC2HTTP   Framing = "jsonrpc2-http"   // JSON-RPC 2.0, one request per HTTP exchange (no stream)
)

// Kind is how a method travels.
type Kind string

// Kinds the format allows.
const (
	Request               Kind = "request"
	Notification          Kind = "notification"
	RequestOrNotification Kind = "request_or_notification"
	Event                 Kind = "event"
	Response              Kind = "response"
)

// Status is how stable a method or operation is.
type Status string

// Statuses the format allows.
const (
	Stable          Status = "stable"
	Experimental    Status = "experimental"
	LegacyTolerated Status = "legacy-tolerated"
	Retired         Status = "retired"
)

// Envelope is the protocol string and version of an envelope-ndjson framing.
type Envelope struct {
	Protocol string `json:"protocol"`
	Version  int64  `json:"version"`
}

// Derive derives a catalogue's methods from one schema file: every $defs
// entry annotated with x-method (the wire name) and x-side (the side that
// serves it) is a method's params or result, and the routing definitions say
// which: a definition listed among the params of a Requests definition is a
// request's params, among a Notifications definition's params a
// notification's, among a Responses definition's results a result.
type Derive struct {
	// Schema is the annotated file, one of the catalogue's schemas.
	Schema string `json:"schema"`
	// Meta optionally names a file under spec/schemas listing the wire names
	// per side as {"<x-side>Methods": {"key": "wire"}}; the derived methods
	// must match it exactly.
	Meta string `json:"meta,omitempty"`
	// Requests, Notifications and Responses name the routing $defs.
	Requests      []string `json:"requests"`
	Notifications []string `json:"notifications"`
	Responses     []string `json:"responses"`
	// Sides maps each x-side value to the catalogue side that serves the
	// method; the other side sends it.
	Sides map[string]string `json:"sides"`
	// Unrouted lists, with a reason each, annotated $defs entries that no
	// routing definition lists (ACP v1's $/cancel_request, x-side protocol,
	// is routed by the schema's root): they derive no method, and the
	// catalogue lists their method under methods instead. An entry that is
	// routed, or not annotated, fails.
	Unrouted map[string]string `json:"unrouted,omitempty"`
}

// Annotation adds to a derived method what the schema does not say.
type Annotation struct {
	Go      string   `json:"go,omitempty"`
	Status  Status   `json:"status,omitempty"`
	Doc     string   `json:"doc,omitempty"`
	Source  string   `json:"source,omitempty"`
	Errors  []Error  `json:"errors,omitempty"`
	Cancels *Cancels `json:"cancels,omitempty"`
	Preempt bool     `json:"preempt,omitempty"`
}

// Cancels says which running requests a method cancels.
type Cancels struct {
	// Method is the wire name of the request it cancels; empty for an ID
	// rule, which cancels any request by its id.
	Method string `json:"method,omitempty"`
	// Key names a params member whose value must equal the target request's
	// params member of the same name; empty: every running request of Method.
	Key string `json:"key,omitempty"`
	// ID names a params member holding the target request's id
	// ($/cancel_request style).
	ID string `json:"id,omitempty"`
}

// Overlay extends a vendored definition with schemas of ours, leaving the
// vendored file untouched. It does one of three things: retype a member
// (Member and Schema; the member keeps the vendored nullability and
// description), forbid members of an open object (Forbid), or add variants
// to a union (Variants). A member overlay with Add adds a member Def does
// not name instead (optional and nullable): a shape real peers send that no
// published schema defines.
type Overlay struct {
	// Def is the vendored definition, "<file>#/$defs/<name>".
	Def string `json:"def"`
	// Member is the property of Def that is retyped (or added, with Add).
	Member string `json:"member,omitempty"`
	// Add: Member is not a property of Def and is added to it, optional
	// and nullable, typed by Schema, after Def's own members. It fails once
	// Def names the member (then the overlay retypes it, or goes).
	Add bool `json:"add,omitempty"`
	// Schema is our definition, "<file>#/$defs/<name>", in one of the
	// catalogue's schemas.
	Schema string `json:"schema,omitempty"`
	// Forbid names members that must not appear in Def although Def is an
	// open object, as if Def said "<name>": false for each: decoding rejects
	// them with wire.ErrForbiddenMember. None may be a property of Def.
	Forbid []string `json:"forbid,omitempty"`
	// Contract scopes the overlay to one flavour (dialect) of the
	// protocol, a lower-case name ("harn"). With Forbid, decoding keeps the
	// members in Extra, like any other extra member, unless it applies that
	// contract, which rejects them with wire.ErrForbiddenMember; the
	// generated package declares each contract its overlays name as a
	// wire.Contract (Contract<Name>), and Def may then be a definition of
	// an imported catalogue (a dialect's rules for the protocol it
	// extends). A member retype or added variants scoped to a contract
	// apply to an imported definition only, whose Go type they leave
	// unchanged: the spec applies them under the contract (what a validator
	// judges a stream of that dialect by), and the generator checks them
	// (the member exists, the variants' tags are not the union's own).
	// Without a contract an overlay applies everywhere.
	Contract string `json:"contract,omitempty"`
	// Variants are definitions of ours ("<file>#/$defs/<name>") added to the
	// union Def as further alternatives, told apart like Def's own.
	Variants []string `json:"variants,omitempty"`
	Reason   string   `json:"reason"`
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
	Qualifier map[string]string `json:"qualifier,omitempty"`
	From      string            `json:"from"`
	To        string            `json:"to"`
	Kind      Kind              `json:"kind"`
	Params    *string           `json:"params"`
	Result    *string           `json:"result"`
	Errors    []Error           `json:"errors"`
	Status    Status            `json:"status"`
	Source    string            `json:"source,omitempty"`
	Doc       string            `json:"doc"`
	Cancels   *Cancels          `json:"cancels,omitempty"`
	// FrameID names a string member of an event's params whose value the
	// event's frame carries as its id, when present (AgentPM's
	// harness_event frames carry the event's correlation_id).
	FrameID string `json:"frame_id,omitempty"`
	// Preempt: the receiving side handles the method as soon as it arrives,
	// on the connection's control lane, never behind running handlers (a
	// control message such as a live-session attach during a prompt).
	Preempt    bool        `json:"preempt,omitempty"`
	Operations *Operations `json:"operations,omitempty"`
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
	Status    Status            `json:"status"`
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

// Kinds, statuses and framings the format allows.
var (
	Kinds    = []Kind{Request, Notification, RequestOrNotification, Event, Response}
	Statuses = []Status{Stable, Experimental, LegacyTolerated, Retired}
	Framings = []Framing{JSONRPC2NDJSON, EnvelopeNDJSON, StdoutJSON, JSONRPC2HTTP}
)

// Load reads and validates a catalogue file. Unknown members are errors. A
// catalogue that extends another is returned merged with its base (read
// from the same directory), its own form in Written.
func Load(path string) (*Catalogue, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	c, err := decode(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	read := func(name string) ([]byte, error) { return os.ReadFile(filepath.Join(filepath.Dir(path), name)) }
	if c, err = c.complete(read); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	c.File = path
	return c, nil
}

// LoadFS is Load for the catalogue at p in fsys: data is its content,
// already read, and a base it extends is read from p's directory in fsys.
func LoadFS(fsys fs.FS, p string, data []byte) (*Catalogue, error) {
	c, err := decode(data)
	if err != nil {
		return nil, err
	}
	read := func(name string) ([]byte, error) { return fs.ReadFile(fsys, pathpkg.Join(pathpkg.Dir(p), name)) }
	return c.complete(read)
}

// complete merges the base c extends, read with read, and validates.
func (c *Catalogue) complete(read func(name string) ([]byte, error)) (*Catalogue, error) {
	if c.Extends != nil {
		var err error
		if c, err = c.extend(read); err != nil {
			return nil, err
		}
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return c, nil
}

// Parse decodes and validates catalogue JSON. A catalogue that extends
// another needs Load, which reads the base from the catalogue's directory.
func Parse(data []byte) (*Catalogue, error) {
	c, err := decode(data)
	if err != nil {
		return nil, err
	}
	if c.Extends != nil {
		return nil, fmt.Errorf("extends %q: a catalogue that extends another is read with Load", c.Extends.Catalogue)
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return c, nil
}

func decode(data []byte) (*Catalogue, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var c Catalogue
	if err := dec.Decode(&c); err != nil {
		return nil, err
	}
	return &c, nil
}

// baseFile is the file name of an extended catalogue: no directory.
var baseFile = regexp.MustCompile(`^[A-Za-z0-9_-][A-Za-z0-9._-]*\.json$`)

// extend merges c's base, read from dir, into a new catalogue (Extends).
func (c *Catalogue) extend(read func(name string) ([]byte, error)) (*Catalogue, error) {
	e := c.Extends
	var errs []string
	bad := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	if !baseFile.MatchString(e.Catalogue) {
		return nil, fmt.Errorf("extends: catalogue %q is not a .json file name in the same directory", e.Catalogue)
	}
	if strings.TrimSpace(e.Reason) == "" {
		bad("extends: needs a reason")
	}
	data, err := read(e.Catalogue)
	if err != nil {
		return nil, fmt.Errorf("extends: %w", err)
	}
	base, err := decode(data)
	if err != nil {
		return nil, fmt.Errorf("extends: %s: %w", e.Catalogue, err)
	}
	if base.Extends != nil {
		return nil, fmt.Errorf("extends: %s extends %s in turn; a base extends no other", e.Catalogue, base.Extends.Catalogue)
	}
	if err := base.Validate(); err != nil {
		return nil, fmt.Errorf("extends: %s: %w", e.Catalogue, err)
	}
	if c.Framing != "" || c.Envelope != nil || len(c.Sides) > 0 {
		bad("extends: framing, envelope and sides are the base's; an extension gives none")
	}
	if c.Derive != nil {
		bad("extends: the derivation is the base's; an extension adds unrouted entries with extends.unrouted")
	}
	if c.Package == base.Package {
		bad("extends: package %q is the base's own", c.Package)
	}
	for _, from := range sortedKeys(e.Rebase) {
		to := e.Rebase[from]
		switch {
		case !slices.Contains(base.Schemas, from):
			bad("extends: rebase %q is not a schema file of %s", from, e.Catalogue)
		case !schemaFile.MatchString(to) || slices.Contains(base.Schemas, to):
			bad("extends: rebase %q to %q: not a .json path under spec/schemas the base does not list", from, to)
		}
	}
	if e.Status != "" && !slices.Contains(Statuses, e.Status) {
		bad("extends: status %q is not one of %v", e.Status, Statuses)
	}
	if e.Status != "" && base.Derive == nil {
		bad("extends: a status for derived methods, but %s derives none", e.Catalogue)
	}
	if len(e.Unrouted) > 0 && base.Derive == nil {
		bad("extends: unrouted entries, but %s derives no methods", e.Catalogue)
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%s", strings.Join(errs, "\n  "))
	}
	rb := func(ref string) string {
		file, frag, hasFrag := strings.Cut(ref, "#")
		if to, ok := e.Rebase[file]; ok {
			file = to
		}
		if hasFrag {
			return file + "#" + frag
		}
		return file
	}
	rbp := func(ref *string) *string {
		if ref == nil {
			return nil
		}
		s := rb(*ref)
		return &s
	}
	m := *base
	m.Protocol, m.Title, m.Doc, m.Package = c.Protocol, c.Title, c.Doc, c.Package
	m.Extends = c.Extends
	m.Written = c
	m.Base = base
	m.Schemas = nil
	for _, f := range append(slices.Clone(base.Schemas), c.Schemas...) {
		f = rb(f)
		if slices.Contains(m.Schemas, f) {
			bad("extends: schema file %q is the base's already", f)
		}
		m.Schemas = append(m.Schemas, f)
	}
	m.Imports = append(slices.Clone(base.Imports), c.Imports...)
	if d := base.Derive; d != nil {
		nd := *d
		nd.Schema = rb(d.Schema)
		nd.Unrouted = map[string]string{}
		for k, v := range d.Unrouted {
			nd.Unrouted[k] = v
		}
		for k, v := range e.Unrouted {
			if _, dup := nd.Unrouted[k]; dup {
				bad("extends: unrouted %s is the base's already", k)
			}
			nd.Unrouted[k] = v
		}
		m.Derive = &nd
	}
	m.Annotations = map[string]Annotation{}
	for k, v := range base.Annotations {
		m.Annotations[k] = v
	}
	for k, v := range c.Annotations {
		if _, dup := m.Annotations[k]; dup {
			bad("extends: annotation %q is the base's already", k)
		}
		m.Annotations[k] = v
	}
	m.Overlays = nil
	for _, o := range append(slices.Clone(base.Overlays), c.Overlays...) {
		o.Def = rb(o.Def)
		if o.Schema != "" {
			o.Schema = rb(o.Schema)
		}
		o.Variants = slices.Clone(o.Variants)
		for i, v := range o.Variants {
			o.Variants[i] = rb(v)
		}
		m.Overlays = append(m.Overlays, o)
	}
	m.Errors = append(slices.Clone(base.Errors), c.Errors...)
	m.Methods = nil
	for _, x := range append(slices.Clone(base.Methods), c.Methods...) {
		x.Params, x.Result = rbp(x.Params), rbp(x.Result)
		if ops := x.Operations; ops != nil {
			no := *ops
			no.Items = slices.Clone(ops.Items)
			for i := range no.Items {
				no.Items[i].Args, no.Items[i].Result = rbp(no.Items[i].Args), rbp(no.Items[i].Result)
			}
			x.Operations = &no
		}
		m.Methods = append(m.Methods, x)
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%s", strings.Join(errs, "\n  "))
	}
	return &m, nil
}

// Rebased returns file as the catalogue reads it: the file its Extends
// rebases it to, or file itself.
func (c *Catalogue) Rebased(file string) string {
	if c.Extends != nil {
		if to, ok := c.Extends.Rebase[file]; ok {
			return to
		}
	}
	return file
}

var (
	goIdent = regexp.MustCompile(`^[A-Z][A-Za-z0-9]*$`)
	goPkg   = regexp.MustCompile(`^[a-z][a-z0-9]*$`)
	// schemaFile is a path under spec/schemas: slash-separated segments, a
	// .json file (harn-host.schema.json, acp/v0.12.2/schema.json).
	schemaFile = regexp.MustCompile(`^([A-Za-z0-9_-][A-Za-z0-9._-]*/)*[A-Za-z0-9_-][A-Za-z0-9._-]*\.json$`)
	// schemaID is a reference to a (possibly nested) $defs entry of such a file.
	schemaID = regexp.MustCompile(`^([A-Za-z0-9_-][A-Za-z0-9._-]*/)*[A-Za-z0-9_-][A-Za-z0-9._-]*\.json#(/\$defs/[A-Za-z0-9_.-]+)+$`)
	// contractName is the name of a contract an overlay scopes members to.
	contractName = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
)

// Validate checks the catalogue's own consistency and its listed methods.
// Derived methods are checked by Expand, which needs the schema files.
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
	if (c.Framing == EnvelopeNDJSON) != (c.Envelope != nil) {
		bad("envelope {protocol, version} is required for, and only for, the %s framing", EnvelopeNDJSON)
	}
	if c.Envelope != nil && (c.Envelope.Protocol == "" || c.Envelope.Version <= 0) {
		bad("envelope needs a protocol string and a positive version")
	}
	for _, f := range c.Schemas {
		if !schemaFile.MatchString(f) {
			bad("schema file %q is not a .json path under spec/schemas", f)
		}
	}
	for i, imp := range c.Imports {
		if !goPkg.MatchString(imp) || imp == c.Package {
			bad("import %q is not the package name of another catalogue", imp)
		}
		if slices.Contains(c.Imports[:i], imp) {
			bad("import %q is listed twice", imp)
		}
	}
	for _, s := range c.Sides {
		if s.Name == "" || !goIdent.MatchString(s.Go) {
			bad("side %q: needs a name and an exported Go name", s.Name)
		}
	}
	if len(c.Sides) != 2 || len(c.Sides) == 2 && c.Sides[0].Name == c.Sides[1].Name {
		bad("a protocol has exactly two sides with different names, got %d", len(c.Sides))
	}
	if d := c.Derive; d != nil {
		if !slices.Contains(c.Schemas, d.Schema) {
			bad("derive: schema %q is not listed in schemas", d.Schema)
		}
		if d.Meta != "" && !schemaFile.MatchString(d.Meta) {
			bad("derive: meta %q is not a .json path under spec/schemas", d.Meta)
		}
		if len(d.Requests)+len(d.Notifications) == 0 {
			bad("derive: name the routing definitions of requests and notifications")
		}
		for v, side := range d.Sides {
			if c.Side(side).Name == "" {
				bad("derive: x-side %q maps to %q, which is not a side", v, side)
			}
		}
	} else if len(c.Annotations) > 0 {
		bad("annotations apply to derived methods; this catalogue derives none")
	}
	for i, o := range c.Overlays {
		forms := 0
		refs := []string{o.Def}
		if o.Member != "" || o.Schema != "" {
			forms++
			refs = append(refs, o.Schema)
			if o.Member == "" {
				bad("overlays[%d]: a member overlay needs member and schema", i)
			}
		}
		if o.Add && (o.Member == "" || o.Schema == "") {
			bad("overlays[%d]: add needs member and schema", i)
		}
		if len(o.Forbid) > 0 {
			forms++
			for _, f := range o.Forbid {
				if f == "" {
					bad("overlays[%d]: forbid lists an empty member name", i)
				}
			}
		}
		if len(o.Variants) > 0 {
			forms++
			refs = append(refs, o.Variants...)
		}
		if o.Contract != "" && (o.Add || !contractName.MatchString(o.Contract)) {
			bad("overlays[%d]: contract %q needs a lower-case name ([a-z][a-z0-9_]*) and an overlay that does not add a member", i, o.Contract)
		}
		if forms != 1 || o.Reason == "" {
			bad("overlays[%d]: needs def, a reason and exactly one of member+schema, forbid or variants", i)
			continue
		}
		for j, ref := range refs {
			if !schemaID.MatchString(ref) {
				bad("overlays[%d]: %q is not <file>.json#/$defs/<name>", i, ref)
				continue
			}
			// A contract's Def may be in an imported catalogue's file,
			// which the IR checks; our schemas are always the catalogue's.
			if file, _, _ := strings.Cut(ref, "#"); !slices.Contains(c.Schemas, file) && (j > 0 || o.Contract == "") {
				bad("overlays[%d]: schema file %q is not listed in schemas", i, file)
			}
		}
	}
	for _, e := range c.Errors {
		errs = append(errs, checkError("errors", e)...)
	}
	errs = append(errs, c.checkMethods(c.Methods)...)
	if len(errs) > 0 {
		return fmt.Errorf("invalid catalogue:\n  %s", strings.Join(errs, "\n  "))
	}
	return nil
}

// checkMethods checks a list of methods (listed, or listed and derived).
func (c *Catalogue) checkMethods(methods []Method) []string {
	var errs []string
	bad := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	checkRef := func(where string, ref *string) {
		if ref != nil && !schemaID.MatchString(*ref) {
			bad("%s: %q is not <file>.json#/$defs/<name>", where, *ref)
		}
		// A catalogue that imports others may also name their files; the
		// generator checks those when it resolves the imports.
		if ref != nil && len(c.Imports) == 0 {
			file, _, _ := strings.Cut(*ref, "#")
			if !slices.Contains(c.Schemas, file) {
				bad("%s: schema file %q is not listed in schemas", where, file)
			}
		}
	}
	checkErrors := func(where string, es []Error) {
		for _, e := range es {
			errs = append(errs, checkError(where, e)...)
		}
	}
	seen := map[string]bool{}
	goNames := map[string]string{}
	for i, m := range methods {
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
		if c.Side(m.From).Name == "" || c.Side(m.To).Name == "" || m.From == m.To {
			bad("%s: from %q to %q must name the two different sides", where, m.From, m.To)
		}
		if !slices.Contains(Kinds, m.Kind) {
			bad("%s: kind %q is not one of %v", where, m.Kind, Kinds)
		}
		if !slices.Contains(Statuses, m.Status) {
			bad("%s: status %q is not one of %v", where, m.Status, Statuses)
		}
		if (m.Kind == Notification || m.Kind == Event) && m.Result != nil {
			bad("%s: a %s has no result", where, m.Kind)
		}
		checkRef(where+" params", m.Params)
		checkRef(where+" result", m.Result)
		checkErrors(where, m.Errors)
		if m.Errors == nil {
			bad("%s: errors must be given ([] for none)", where)
		}
		if m.FrameID != "" && (m.Kind != Event || c.Framing != EnvelopeNDJSON) {
			bad("%s: frame_id is for events of an %s protocol, not a %s", where, EnvelopeNDJSON, m.Kind)
		}
		if cn := m.Cancels; cn != nil && cn.ID != "" {
			if cn.Key != "" || cn.Method != "" {
				bad("%s: cancels by id names no method and no key", where)
			}
		} else if cn != nil {
			target := -1
			for j, t := range methods {
				if t.Wire == cn.Method && t.From == m.From && t.To == m.To {
					target = j
				}
			}
			if target < 0 {
				bad("%s: cancels %q, which is no method sent in the same direction", where, cn.Method)
			} else if k := methods[target].Kind; k != Request && k != RequestOrNotification {
				bad("%s: cancels %q, which is a %s, not a request", where, cn.Method, k)
			}
		}
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
				if op.Errors == nil {
					bad("%s: errors must be given ([] for none)", ow)
				}
			}
		}
	}
	return errs
}

// checkError checks one documented error's code.
func checkError(where string, e Error) []string {
	var n int64
	var s string
	if json.Unmarshal(e.Code, &n) != nil && (json.Unmarshal(e.Code, &s) != nil || s == "") {
		return []string{fmt.Sprintf("%s: error code %s is neither an integer nor a string", where, e.Code)}
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
