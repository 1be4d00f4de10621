// Package scaffold adds a method, or an operation carried inside a method
// (Harn's host/call), to one of bridgekit's catalogues: the catalogue entry,
// with status experimental, and open-object stub schemas for its params (or
// args) and result, in a schema file of ours. It never edits a vendored
// schema (a file under a directory of spec/schemas that has a SOURCES.md):
// for a catalogue whose first schema file is vendored (ACP), the stubs go
// into <package>-extensions.schema.json, which is created and listed in the
// catalogue's schemas when missing. A method of a catalogue whose methods are
// told apart by a qualifier (agentpm-service's role) needs Request.Role.
//
// Everything is planned and checked before a file is written, so a request
// that fails (a name that exists already, an unknown side) changes nothing.
// Regenerating is the caller's part (bridgekit scaffold runs the generator);
// HandlerStub then renders a handler func for the new field from the
// generated code.
package scaffold

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/bridgekit/bridgekit/generator/internal/catalogue"
	"github.com/bridgekit/bridgekit/generator/internal/naming"
	"github.com/bridgekit/bridgekit/generator/internal/schema"
)

// Kind is how a scaffolded method travels.
type Kind string

// Kinds a method can be scaffolded as.
const (
	KindRequest      Kind = "request"
	KindNotification Kind = "notification"
)

// Request says what to add. Catalogue is always needed; a method needs Wire,
// From and To; an operation needs Operation (or Match).
type Request struct {
	Catalogue string // catalogue name under spec/catalogue, without .json (harn)

	// Wire, From, To, Kind and Role describe a new method.
	Wire string // wire name (host/example_ping, _example/ping)
	From string // sending side (vm)
	To   string // receiving side, the side whose handler struct gets the field (host)
	Kind Kind   // request (default) or notification
	// Role is the qualifier value, for a catalogue whose methods carry a
	// one-member qualifier (agentpm-service: {"service": Role}).
	Role string

	// Operation is the selector value of a new operation carried inside
	// Method (host/call's name: project.deploy_status); Match gives every
	// selector member instead, for a method selecting by several.
	Operation string
	Match     map[string]string
	// Method is the wire name of the method carrying the operation; empty:
	// the catalogue's only method with operations.
	Method string

	// Go is the Go name of the handler field and peer method (default:
	// derived from the wire or operation name).
	Go string
	// Schema is the file under spec/schemas for the stub $defs (default:
	// the catalogue's first schema file if it is ours, else
	// <package>-extensions.schema.json).
	Schema string
	// Doc is the entry's doc (default: a sentence asking for one).
	Doc string
}

// IsOperation reports whether r asks for an operation.
func (r *Request) IsOperation() bool { return r.Operation != "" || len(r.Match) > 0 }

// Edit is one file a Change writes: Old is nil for a file it creates.
type Edit struct {
	Path     string // absolute, or relative to the process's directory as root was
	Old, New []byte
}

// Change is a planned or applied scaffold.
type Change struct {
	Edits []Edit
	// Package is the generated package (gen/<Package>), Side the Go name of
	// the side whose <Side>Handlers gets the field Go.
	Package, Side, Go string
	// Wire is the method's wire name (for an operation, the carrying one's);
	// Operation the operation's selector values, "" for a method.
	Wire, Operation string
	// Catalogue is the catalogue file, Schema the schema file of the stubs
	// (under spec/schemas).
	Catalogue, Schema string
}

// Files lists the files the change writes.
func (c *Change) Files() []string {
	var out []string
	for _, e := range c.Edits {
		out = append(out, e.Path)
	}
	return out
}

// ErrExists is returned (wrapped) when the method, operation, Go name or
// stub definition to add exists already.
var ErrExists = errors.New("already exists")

// Scaffold plans the request against the repository at root and writes the
// result. It returns the change (its Files are what it wrote); on an error
// nothing is written.
func Scaffold(root string, req Request) (*Change, error) {
	ch, err := Plan(root, req)
	if err != nil {
		return nil, err
	}
	if err := ch.Apply(); err != nil {
		return nil, err
	}
	return ch, nil
}

// Apply writes the change's files. When one fails, those written are put
// back as they were.
func (c *Change) Apply() error {
	for i, e := range c.Edits {
		if err := os.WriteFile(e.Path, e.New, 0o644); err != nil {
			_ = revert(c.Edits[:i])
			return err
		}
	}
	return nil
}

// Revert puts the change's files back as they were before Apply (removing
// the files it created).
func (c *Change) Revert() error { return revert(c.Edits) }

func revert(edits []Edit) error {
	var errs []error
	for _, e := range edits {
		if e.Old == nil {
			if err := os.Remove(e.Path); err != nil && !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, err)
			}
			continue
		}
		if err := os.WriteFile(e.Path, e.Old, 0o644); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Plan computes the change without writing anything: the catalogue with the
// new entry, checked together with every method it lists or derives, and
// the schema file with the stubs.
func Plan(root string, req Request) (*Change, error) {
	if req.Catalogue == "" {
		return nil, fmt.Errorf("no catalogue given")
	}
	if strings.ContainsAny(req.Catalogue, `/\`) {
		return nil, fmt.Errorf("catalogue %q: give its name under spec/catalogue, without .json", req.Catalogue)
	}
	catPath := filepath.Join(root, "spec", "catalogue", req.Catalogue+".json")
	catOld, err := os.ReadFile(catPath)
	if err != nil {
		return nil, fmt.Errorf("catalogue %s: %w", req.Catalogue, err)
	}
	c, err := catalogue.Load(catPath)
	if err != nil {
		return nil, err
	}
	own := c // what the file says: the extension's own members, or c
	if c.Written != nil {
		own = c.Written
	}
	schemasDir := filepath.Join(root, "spec", "schemas")

	file := req.Schema
	if file == "" {
		file = c.Package + "-extensions.schema.json"
		if len(c.Schemas) > 0 && !vendored(schemasDir, c.Schemas[0]) {
			file = c.Schemas[0]
		}
	} else if vendored(schemasDir, file) {
		return nil, fmt.Errorf("schema %s is vendored (its directory has a SOURCES.md): never edit vendored schemas; stubs go into a schema file of ours", file)
	}
	if path.Clean(file) != file || strings.HasPrefix(file, "../") || !strings.HasSuffix(file, ".json") {
		return nil, fmt.Errorf("schema %q is not a .json path under spec/schemas", file)
	}

	ch := &Change{Package: c.Package, Catalogue: catPath, Schema: file}
	var defs []stubDef
	if req.IsOperation() {
		defs, err = planOperation(c, own, req, file, ch)
	} else {
		defs, err = planMethod(c, own, req, file, ch)
	}
	if err != nil {
		return nil, err
	}

	schemaPath := filepath.Join(schemasDir, filepath.FromSlash(file))
	schemaOld, err := os.ReadFile(schemaPath)
	created := false
	switch {
	case errors.Is(err, os.ErrNotExist) && req.Schema == "":
		schemaOld, created = newSchemaFile(c, req.Catalogue, file), true
	case err != nil:
		return nil, fmt.Errorf("schema %s: %w", file, err)
	}
	schemaNew := schemaOld
	for _, d := range defs {
		stub := fmt.Sprintf(`{ "description": %q, "type": "object", "additionalProperties": true }`, d.desc)
		if schemaNew, err = appendDef(schemaNew, d.name, stub); err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
	}
	if !slices.Contains(c.Schemas, file) {
		c.Schemas = append(c.Schemas, file)
		if own != c {
			own.Schemas = append(own.Schemas, file)
		}
	}

	// Check the whole catalogue as the generator will read it: listed and
	// derived methods together, with the schema file as it will be.
	if err := c.Validate(); err != nil {
		return nil, existsOr(err)
	}
	files := map[string]*schema.File{}
	for _, name := range c.Schemas {
		if name == file {
			s, err := schema.Parse(schemaNew, name)
			if err != nil {
				return nil, err
			}
			files[name] = &schema.File{Name: name, Root: s, Data: schemaNew}
			continue
		}
		f, err := schema.LoadFile(schemasDir, name)
		if err != nil {
			return nil, err
		}
		files[name] = f
	}
	read := func(name string) ([]byte, error) {
		return os.ReadFile(filepath.Join(schemasDir, filepath.FromSlash(name)))
	}
	if _, err := c.Expand(files, read); err != nil {
		return nil, existsOr(err)
	}

	catNew, err := FormatCatalogue(c)
	if err != nil {
		return nil, err
	}
	ch.Edits = append(ch.Edits, Edit{Path: catPath, Old: catOld, New: catNew})
	e := Edit{Path: schemaPath, Old: schemaOld, New: schemaNew}
	if created {
		e.Old = nil
	}
	ch.Edits = append(ch.Edits, e)
	return ch, nil
}

// stubDef is one stub $defs entry to add.
type stubDef struct{ name, desc string }

// defBase turns a wire or operation name into a $defs name stem.
func defBase(name string) string {
	return strings.ToLower(strings.Join(naming.Words(name), "_"))
}

func planMethod(c, own *catalogue.Catalogue, req Request, file string, ch *Change) ([]stubDef, error) {
	if req.Wire == "" || req.From == "" || req.To == "" {
		return nil, fmt.Errorf("a method needs a wire name, --from and --to")
	}
	for _, side := range []string{req.From, req.To} {
		if c.Side(side).Name == "" {
			return nil, fmt.Errorf("%q is not a side of %s: its sides are %s", side, req.Catalogue, sideNames(c))
		}
	}
	if req.From == req.To {
		return nil, fmt.Errorf("--from and --to must be the two different sides of %s (%s)", req.Catalogue, sideNames(c))
	}
	kind := req.Kind
	if kind == "" {
		kind = KindRequest
	}
	if kind != KindRequest && kind != KindNotification {
		return nil, fmt.Errorf("kind %q: give request or notification", kind)
	}
	m := catalogue.Method{Wire: req.Wire, Go: req.Go, From: req.From, To: req.To, Kind: catalogue.Kind(kind)}
	key, roles := qualifierKey(c)
	switch {
	case key != "" && req.Role == "":
		return nil, fmt.Errorf("methods of %s are told apart by their %q member: give a role (one of %s)", req.Catalogue, key, strings.Join(roles, ", "))
	case key == "" && req.Role != "":
		return nil, fmt.Errorf("methods of %s carry no qualifier: a role applies to a catalogue such as agentpm-service", req.Catalogue)
	case key != "" && !slices.Contains(roles, req.Role):
		return nil, fmt.Errorf("role %q is not one of %s's: %s", req.Role, req.Catalogue, strings.Join(roles, ", "))
	case key != "":
		m.Qualifier = map[string]string{key: req.Role}
	}
	if m.Go == "" {
		m.Go = naming.Go(req.Wire)
	}
	base := defBase(req.Wire)
	if key != "" {
		base = defBase(req.Role + "_" + req.Wire)
	}
	params := file + "#/$defs/" + base + "_params"
	m.Params = &params
	defs := []stubDef{{base + "_params", "Params of " + req.Wire + "."}}
	if kind == KindRequest {
		result := file + "#/$defs/" + base + "_result"
		m.Result = &result
		defs = append(defs, stubDef{base + "_result", "Result of " + req.Wire + "."})
	}
	m.Errors = []catalogue.Error{}
	m.Status = catalogue.Experimental
	m.Doc = req.Doc
	if m.Doc == "" {
		m.Doc = "Describe what " + req.Wire + " does, who sends it and when."
	}
	for _, x := range c.Methods {
		if x.Wire == m.Wire && x.From == m.From && x.To == m.To && maps(x.Qualifier, m.Qualifier) {
			return nil, fmt.Errorf("%s %s (%s -> %s): %w in %s", m.Kind, m.Wire, m.From, m.To, ErrExists, req.Catalogue)
		}
	}
	c.Methods = append(c.Methods, m)
	if own != c {
		own.Methods = append(own.Methods, m)
	}
	ch.Side, ch.Go, ch.Wire = c.Side(m.To).Go, m.Go, m.Wire
	return defs, nil
}

func planOperation(c, own *catalogue.Catalogue, req Request, file string, ch *Change) ([]stubDef, error) {
	if req.Wire != "" || req.From != "" || req.To != "" || req.Role != "" {
		return nil, fmt.Errorf("an operation takes its method's wire name, sides and kind: give no wire, from, to or role")
	}
	idx := -1
	var carriers []string
	for i, m := range own.Methods {
		if m.Operations == nil {
			continue
		}
		carriers = append(carriers, m.Wire)
		if req.Method == m.Wire || req.Method == "" {
			if idx >= 0 && req.Method == "" {
				return nil, fmt.Errorf("%s has several methods with operations (%s): give the method", req.Catalogue, strings.Join(carriers, ", "))
			}
			idx = i
		}
	}
	if idx < 0 {
		if req.Method != "" {
			return nil, fmt.Errorf("%s lists no method %s with operations (methods with operations: %s)", req.Catalogue, req.Method, strings.Join(carriers, ", "))
		}
		return nil, fmt.Errorf("%s lists no method that carries operations", req.Catalogue)
	}
	m := &own.Methods[idx]
	ops := m.Operations
	match := map[string]string{}
	for k, v := range req.Match {
		match[k] = v
	}
	if req.Operation != "" {
		if len(ops.Selector) != 1 {
			return nil, fmt.Errorf("%s selects operations by %s: give each of them (key=value) instead of a name", m.Wire, strings.Join(ops.Selector, " and "))
		}
		if _, ok := match[ops.Selector[0]]; ok {
			return nil, fmt.Errorf("the operation's %s is given twice", ops.Selector[0])
		}
		match[ops.Selector[0]] = req.Operation
	}
	for k := range match {
		if !slices.Contains(ops.Selector, k) {
			return nil, fmt.Errorf("%s selects operations by %s, not %q", m.Wire, strings.Join(ops.Selector, ", "), k)
		}
	}
	var values []string
	for _, s := range ops.Selector {
		if match[s] == "" {
			return nil, fmt.Errorf("%s selects operations by %s: %s is missing", m.Wire, strings.Join(ops.Selector, ", "), s)
		}
		values = append(values, match[s])
	}
	name := strings.Join(values, ".")
	for _, it := range ops.Items {
		if maps(it.Match, match) {
			return nil, fmt.Errorf("operation %s of %s: %w in %s", name, m.Wire, ErrExists, req.Catalogue)
		}
	}
	op := catalogue.Operation{Match: match, Go: req.Go, Errors: []catalogue.Error{}, Status: catalogue.Experimental, Doc: req.Doc}
	if op.Go == "" {
		op.Go = naming.Go(name)
	}
	if op.Doc == "" {
		op.Doc = "Describe what the operation " + name + " does and what it returns."
	}
	// Advertise as the method's other operations are: Harn's host/call
	// lists "<capability>.<op>" as {capability: [op]} in host/capabilities.
	if advertisesByDot(ops) {
		capName, opName, ok := strings.Cut(name, ".")
		if !ok || capName == "" || opName == "" {
			return nil, fmt.Errorf("operations of %s are named <capability>.<operation> (process.list_shells), not %q", m.Wire, name)
		}
		op.Advertise = &catalogue.Advertise{Capability: capName, Op: opName}
	}
	base := defBase(name)
	args, result := file+"#/$defs/"+base+"_args", file+"#/$defs/"+base+"_result"
	op.Args, op.Result = &args, &result
	ops.Items = append(ops.Items, op)
	if own != c {
		// The merged catalogue holds its own copy of the method.
		for i := range c.Methods {
			x := &c.Methods[i]
			if x.Wire == m.Wire && x.From == m.From && x.To == m.To && x.Operations != nil {
				x.Operations.Items = append(x.Operations.Items, op)
			}
		}
	}
	ch.Side, ch.Go, ch.Wire, ch.Operation = c.Side(m.To).Go, op.Go, m.Wire, name
	return []stubDef{
		{base + "_args", "Arguments of the " + m.Wire + " operation " + name + "."},
		{base + "_result", "Result of the " + m.Wire + " operation " + name + "."},
	}, nil
}

// advertisesByDot reports whether every operation of ops advertises itself
// as {capability, op} split from its one selector value at the first dot.
func advertisesByDot(ops *catalogue.Operations) bool {
	if len(ops.Selector) != 1 || len(ops.Items) == 0 {
		return false
	}
	for _, it := range ops.Items {
		a := it.Advertise
		if a == nil || a.Capability+"."+a.Op != it.Match[ops.Selector[0]] {
			return false
		}
	}
	return true
}

// qualifierKey returns the member that tells a catalogue's methods apart
// when all of them carry the same one-member qualifier, and the values
// (roles) it takes in catalogue order.
func qualifierKey(c *catalogue.Catalogue) (string, []string) {
	key := ""
	var roles []string
	for _, m := range c.Methods {
		if len(m.Qualifier) != 1 {
			return "", nil
		}
		for k, v := range m.Qualifier {
			if key != "" && k != key {
				return "", nil
			}
			key = k
			if !slices.Contains(roles, v) {
				roles = append(roles, v)
			}
		}
	}
	return key, roles
}

func maps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func sideNames(c *catalogue.Catalogue) string {
	var names []string
	for _, s := range c.Sides {
		names = append(names, s.Name)
	}
	return strings.Join(names, " and ")
}

// existsOr marks a catalogue error about a duplicate as ErrExists.
func existsOr(err error) error {
	msg := err.Error()
	if strings.Contains(msg, "duplicate") || strings.Contains(msg, "already used") {
		return fmt.Errorf("%w: %w", ErrExists, err)
	}
	return err
}

// vendored reports whether a schema file is upstream's: a directory between
// it and spec/schemas holds a SOURCES.md saying where it came from.
func vendored(schemasDir, file string) bool {
	for dir := path.Dir(file); dir != "." && dir != "/" && dir != ""; dir = path.Dir(dir) {
		if _, err := os.Stat(filepath.Join(schemasDir, filepath.FromSlash(dir), "SOURCES.md")); err == nil {
			return true
		}
	}
	return false
}

// newSchemaFile is the overlay schema file of ours that stubs of a
// catalogue whose schemas are vendored go into.
func newSchemaFile(c *catalogue.Catalogue, catName, file string) []byte {
	doc := fmt.Sprintf(`{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "$id": "https://bridgekit.dev/schemas/%s",
  "title": %q,
  "description": %q,
  "$defs": {}
}
`, file, "Extension methods of "+c.Title,
		"Schemas of ours for methods and operations added to spec/catalogue/"+catName+".json (bridgekit scaffold writes their stubs here): the vendored schema files stay as upstream publishes them.")
	return []byte(doc)
}

// FormatCatalogue renders a catalogue in the canonical layout that the
// checked-in catalogues use, so scaffolding changes only what it adds. A
// catalogue that extends another is written as its file says it.
func FormatCatalogue(c *catalogue.Catalogue) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if c.Written != nil {
		c = c.Written
	}
	if err := enc.Encode(c); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// FormatFile rewrites one catalogue file in the canonical layout.
func FormatFile(p string) error {
	c, err := catalogue.Load(p)
	if err != nil {
		return err
	}
	out, err := FormatCatalogue(c)
	if err != nil {
		return err
	}
	return os.WriteFile(p, out, 0o644)
}

// appendDef inserts "name": def as the last member of the root $defs object,
// leaving the rest of the file byte for byte as it was.
func appendDef(src []byte, name, def string) ([]byte, error) {
	var doc struct {
		Defs map[string]json.RawMessage `json:"$defs"`
	}
	if err := json.Unmarshal(src, &doc); err != nil {
		return nil, err
	}
	if doc.Defs == nil {
		return nil, fmt.Errorf("no root $defs object found")
	}
	if _, ok := doc.Defs[name]; ok {
		return nil, fmt.Errorf("$defs %q: %w", name, ErrExists)
	}
	dec := json.NewDecoder(bytes.NewReader(src))
	depth := 0
	expectKey := false
	lastKey := ""
	inDefs := false
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("no root $defs object found")
		}
		switch v := tok.(type) {
		case json.Delim:
			switch v {
			case '{', '[':
				depth++
				if v == '{' && depth == 2 && lastKey == "$defs" {
					inDefs = true
				}
			case '}', ']':
				if inDefs && depth == 2 {
					end := int(dec.InputOffset()) - 1 // the closing brace
					body := bytes.TrimRight(src[:end], " \t\r\n")
					sep := ","
					if body[len(body)-1] == '{' {
						sep = ""
					}
					insert := fmt.Sprintf("%s\n    %q: %s\n  ", sep, name, def)
					out := append(append(append([]byte{}, body...), insert...), src[end:]...)
					var check any
					if err := json.Unmarshal(out, &check); err != nil {
						return nil, err
					}
					return out, nil
				}
				depth--
			}
			expectKey = depth == 1
		case string:
			if depth == 1 && expectKey {
				lastKey = v
				expectKey = false
			} else if depth == 1 {
				expectKey = true
			}
		default:
			if depth == 1 {
				expectKey = true
			}
		}
	}
}
