// Package validate checks recorded traffic, frame by frame, three ways:
// each frame is matched to its catalogue method (a reply through the id
// of its request), its body is validated against the method's JSON Schema
// (the spec as the generator reads it, overlays applied, embedded in the
// root module as spec.FS), then decoded into the method's generated type
// and re-encoded, and the result must equal the original structurally.
//
// Three input formats are read, told apart by their first line: a trace
// of `bridgekit trace` (JSON Lines of session, frame and end records,
// docs/bridgekit/trace.md), a recording of bridgekit's test proxy
// (testdata/acp/traffic: {"seq","ms","dir":"send"|"recv","line","cut"}),
// and raw NDJSON, one frame a line, whose directions are inferred
// (frames.Classifier.ClassifyUndirected).
package validate

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/frames"
	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/tracelog"
	harnpkg "github.com/bridgekit/bridgekit/gen/harn"
	"github.com/bridgekit/bridgekit/generator/codegen"
	"github.com/bridgekit/bridgekit/internal/specschema"
	"github.com/bridgekit/bridgekit/runtime/wire"
	"github.com/bridgekit/bridgekit/spec"
)

// Protocols are the values Options.Protocol takes, besides "" (sniff the
// family from the traffic). acp-v0.12.2 is ACP judged by the schema of
// ACP v0.12.2 (with Harn's overlays), the version Harn pins; the wire
// cannot tell it from v1, so it is never sniffed.
var Protocols = []string{"harn", "acp", "acp-v0.12.2", "agentpm-machine", "agentpm-service"}

// Problem codes besides the classifier's (frames.Problem*).
const (
	// ProblemSchemaValidation: the body does not fit its method's JSON
	// Schema.
	ProblemSchemaValidation = "schema_validation"
	// ProblemRoundTrip: the generated type re-encodes the body differently.
	ProblemRoundTrip = "round_trip"
	// ProblemTrace: a line of a trace or recording that is not a record.
	ProblemTrace = "trace"
)

// A Problem is one thing wrong with a frame of a file.
type Problem struct {
	File string `json:"file"`
	Line int    `json:"line"`
	// Method is the frame's method (a reply's request's), "" when unknown.
	Method  string `json:"method,omitempty"`
	Code    string `json:"code"`
	Pointer string `json:"pointer,omitempty"`
	Message string `json:"message"`
}

// String renders p as file:line: method: pointer: message, with "-" for
// a method or pointer it lacks.
func (p Problem) String() string {
	m, ptr := p.Method, p.Pointer
	if m == "" {
		m = "-"
	}
	if ptr == "" {
		ptr = "-"
	}
	return fmt.Sprintf("%s:%d: %s: %s: %s", p.File, p.Line, m, ptr, p.Message)
}

// Stats counts what a Validator checked.
type Stats struct {
	// Frames read; Checked: those whose body was judged by schema and
	// type; Truncated: frames recorded cut short, which cannot be checked;
	// Unknown: bodies the schema refuses only for a union variant or enum
	// value this version does not know, which the generated type keeps
	// (accepted when they round-trip, as the decoders accept them).
	Frames, Checked, Truncated, Unknown int
}

// Options configure a Validator.
type Options struct {
	// Protocol forces a family (one of Protocols); "" sniffs it.
	Protocol string
}

// A Validator validates streams. It is safe for concurrent use; each
// stream has its own state.
type Validator struct {
	family  frames.Family
	schemas *specschema.Spec
	// methods maps a generated package and a method's Go name to the
	// schema locations of its params and result.
	methods map[methodKey]codegen.MethodSchema
	retype  func(loc string) string
	printer *message.Printer
}

type methodKey struct{ pkg, goName string }

var families = map[string]frames.Family{
	"harn": frames.Harn, "acp": frames.ACP, "acp-v0.12.2": frames.ACP,
	"agentpm-machine": frames.AgentPMMachine, "agentpm-service": frames.AgentPMService,
}

// packages maps a family to its generated package.
var packages = map[frames.Family]string{
	frames.ACP: "acp", frames.Harn: "harn", frames.AgentPMMachine: "agentpmmachine", frames.AgentPMService: "agentpmservice",
}

// ErrProtocol is returned by New for a protocol it does not know.
var ErrProtocol = errors.New("unknown protocol")

const (
	v1     = "acp/v1/schema.json"
	v0122  = "acp/v0.12.2/schema.json"
	specFS = "embedded spec"
)

var loaded = struct {
	once    sync.Once
	methods map[methodKey]codegen.MethodSchema
	err     error
}{}

// New returns a validator reading the spec embedded in the module. The
// spec is loaded and compiled on the first call, once per process.
func New(opts Options) (*Validator, error) {
	fsys := fs.FS(spec.FS)
	fam, ok := families[opts.Protocol]
	if opts.Protocol != "" && !ok {
		return nil, fmt.Errorf("%w %q (want one of %s)", ErrProtocol, opts.Protocol, strings.Join(Protocols, ", "))
	}
	loaded.once.Do(func() {
		s, err := codegen.LoadFS(fsys)
		if err != nil {
			loaded.err = fmt.Errorf("%s: %w", specFS, err)
			return
		}
		ms, err := s.Methods()
		if err != nil {
			loaded.err = fmt.Errorf("%s: %w", specFS, err)
			return
		}
		loaded.methods = map[methodKey]codegen.MethodSchema{}
		for _, m := range ms {
			loaded.methods[methodKey{m.Package, m.Go}] = m
		}
	})
	if loaded.err != nil {
		return nil, loaded.err
	}
	v := &Validator{family: fam, methods: loaded.methods, retype: func(loc string) string { return loc },
		printer: message.NewPrinter(language.English)}
	old := opts.Protocol == "acp-v0.12.2"
	if old {
		v.retype = func(loc string) string {
			if frag, ok := strings.CutPrefix(loc, v1+"#"); ok {
				return v0122 + "#" + frag
			}
			return loc
		}
	}
	sc := &compiled[0]
	if old {
		sc = &compiled[1]
	}
	sc.once.Do(func() {
		if old {
			sc.spec, sc.err = specschema.LoadRetargeted(fsys, v1, v0122)
		} else {
			sc.spec, sc.err = specschema.Load(fsys)
		}
	})
	if sc.err != nil {
		return nil, fmt.Errorf("%s: %w", specFS, sc.err)
	}
	v.schemas = sc.spec
	return v, nil
}

// compiled are the embedded spec's compiled schemas, loaded once per
// process (and shared: a specschema.Spec is safe for concurrent use),
// [0] as it is, [1] with ACP v1's overlays applied to v0.12.2 too, [2]
// under Harn's contract.
var compiled [3]struct {
	once sync.Once
	spec *specschema.Spec
	err  error
}

// MaxLine bounds one line of input.
const MaxLine = tracelog.MaxRecord

// format is what kind of file a stream is.
type format int

const (
	formatRaw format = iota
	formatTrace
	formatRecording
)

// recording is one line of bridgekit's test proxy (internal/recorder).
type recording struct {
	Seq  *int64 `json:"seq"`
	Dir  string `json:"dir"`
	Line string `json:"line"`
	Cut  bool   `json:"cut"`
}

func sniffFormat(line []byte) format {
	var head struct {
		Type    string          `json:"type"`
		Session string          `json:"session"`
		Dir     string          `json:"dir"`
		Line    json.RawMessage `json:"line"`
		JSONRPC json.RawMessage `json:"jsonrpc"`
	}
	if json.Unmarshal(line, &head) != nil || head.JSONRPC != nil {
		return formatRaw
	}
	switch {
	case head.Session != "" && (head.Type == tracelog.TypeSession || head.Type == tracelog.TypeFrame || head.Type == tracelog.TypeEnd):
		return formatTrace
	case len(head.Line) > 0 && head.Line[0] == '"' && (head.Dir == "send" || head.Dir == "recv"):
		return formatRecording
	}
	return formatRaw
}

// stream is the state of one stream being validated.
type stream struct {
	v      *Validator
	name   string
	report func(Problem)
	stats  Stats
	cls    *frames.Classifier
	// lines maps a request's sequence number to its line, for problems
	// reported at the end (requests never answered).
	lines map[int64]int
	seq   int64

	// checks are the schemas this stream has used, by Harn's contract
	// and location; body is the frame's body parsed once, for the schema
	// check and the comparison with its re-encoding (parsed into reenc).
	checks map[checkKey]*schemaCheck
	body   tree
	reenc  tree
	eval   evaluator
	// A recording's line, and the decoder that reads it.
	recLine []byte
	recDec  *jsontext.Decoder
	recIn   bytes.Buffer
}

type checkKey struct {
	harn bool
	loc  string
}

// schemaCheck is a schema as a stream checks bodies with it: compiled by
// the library, and for the fast check (nil when it cannot evaluate the
// schema); or, when it does not compile, the problem every body gets.
type schemaCheck struct {
	sch   *jsonschema.Schema
	fast  *sNode
	fails *frames.Problem
}

// Stream validates the stream r, named name in problems, and calls report
// for every problem, in input order. It returns what it checked, and an
// error only when r cannot be read.
func (v *Validator) Stream(name string, r io.Reader, report func(Problem)) (Stats, error) {
	st := &stream{v: v, name: name, report: report, checks: map[checkKey]*schemaCheck{}}
	st.reset()
	br := bufio.NewReaderSize(r, 64<<10)
	var buf []byte
	lineNo := 0
	f := formatRaw
	first := true
	for {
		line, err := readLine(br, &buf)
		if errors.Is(err, io.EOF) {
			break
		}
		lineNo++
		if errors.Is(err, errTooLong) {
			st.problem(lineNo, "", frames.Problem{Code: frames.ProblemMalformed, Message: fmt.Sprintf("line longer than %d bytes", MaxLine)})
			continue
		}
		if err != nil {
			return st.stats, err
		}
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		if first {
			f, first = sniffFormat(line), false
		}
		switch f {
		case formatRaw:
			st.frame(lineNo, frames.In, true, line, false)
		case formatRecording:
			frame, recv, cut, ok := st.recording(line)
			if !ok {
				st.problem(lineNo, "", frames.Problem{Code: ProblemTrace, Message: "not a recording line ({seq, dir: send|recv, line})"})
				continue
			}
			dir := frames.In // send: the client to the recorded agent, on its stdin
			if recv {
				dir = frames.Out
			}
			st.frame(lineNo, dir, false, frame, cut)
		case formatTrace:
			st.traceLine(lineNo, line)
		}
	}
	st.end()
	return st.stats, nil
}

// recording reads a line of a recording, as json.Unmarshal into a
// recording reads it: the frame it holds (valid until the next call),
// its direction and whether it was cut; ok is false for a line that is
// not a recording's.
func (st *stream) recording(line []byte) (frame []byte, recv, cut, ok bool) {
	if frame, recv, cut, ok, decided := st.recordingFast(line); decided {
		return frame, recv, cut, ok
	}
	var rec recording
	if err := json.Unmarshal(line, &rec); err != nil || rec.Seq == nil || rec.Dir != "send" && rec.Dir != "recv" {
		return nil, false, false, false
	}
	return []byte(rec.Line), rec.Dir == "recv", rec.Cut, true
}

// recordingFast is recording for the lines the recorder writes: an
// object with exactly named members of the right kinds. decided is false
// for anything else (a name json.Unmarshal would match case-insensitively,
// a null, a duplicate, an escape jsontext refuses): json.Unmarshal judges
// those.
func (st *stream) recordingFast(line []byte) (frame []byte, recv, cut, ok, decided bool) {
	st.recIn = *bytes.NewBuffer(line) // decoded in place
	// json.Unmarshal takes duplicate names (the last wins): so does this,
	// except for the members it reads, whose duplicates it leaves to
	// json.Unmarshal.
	if st.recDec == nil {
		st.recDec = jsontext.NewDecoder(&st.recIn, jsontext.AllowDuplicateNames(true))
	} else {
		st.recDec.Reset(&st.recIn, jsontext.AllowDuplicateNames(true))
	}
	dec := st.recDec
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return
	}
	var seq, dirSeen, lineSeen, cutSeen bool
	dir := ""
	st.recLine = st.recLine[:0]
	for dec.PeekKind() == '"' {
		raw, err := dec.ReadValue()
		if err != nil || bytes.IndexByte(raw, '\\') >= 0 {
			return
		}
		// raw is valid until the next read: settle the name first.
		name := raw[1 : len(raw)-1]
		field := ""
		switch string(name) {
		case "seq":
			field = "seq"
		case "dir":
			field = "dir"
		case "line":
			field = "line"
		case "cut":
			field = "cut"
		default:
			for _, known := range [...]string{"seq", "dir", "line", "cut"} {
				if bytes.EqualFold(name, []byte(known)) {
					return
				}
			}
		}
		k := dec.PeekKind()
		switch field {
		case "seq":
			v, err := dec.ReadValue()
			if err != nil || k != '0' || seq {
				return
			}
			if _, err := strconv.ParseInt(string(v), 10, 64); err != nil {
				return
			}
			seq = true
		case "dir":
			v, err := dec.ReadValue()
			if err != nil || k != '"' || dirSeen {
				return
			}
			switch string(v) {
			case `"send"`, `"recv"`:
				dir = string(v[1 : len(v)-1])
			default:
				return
			}
			dirSeen = true
		case "line":
			v, err := dec.ReadValue()
			if err != nil || k != '"' || lineSeen {
				return
			}
			lineSeen = true
			if st.recLine, err = jsontext.AppendUnquote(st.recLine[:0], v); err != nil {
				return
			}
		case "cut":
			if k != 't' && k != 'f' || cutSeen {
				return
			}
			cutSeen = true
			if _, err := dec.ReadValue(); err != nil {
				return
			}
			cut = k == 't'
		default:
			if err := dec.SkipValue(); err != nil {
				return
			}
		}
	}
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '}' {
		return
	}
	if _, err := dec.ReadToken(); !errors.Is(err, io.EOF) {
		return
	}
	if !seq || !dirSeen {
		return nil, false, false, false, true
	}
	return st.recLine, dir == "recv", cut, true, true
}

func (st *stream) reset() {
	st.cls = frames.New(st.v.family)
	st.lines = map[int64]int{}
	st.seq = 0
}

func (st *stream) traceLine(lineNo int, line []byte) {
	// The trace reader's own checks, on this one line.
	rd := tracelog.NewReader(io.MultiReader(bytes.NewReader(line), strings.NewReader("\n")), 0)
	r, err := rd.Next()
	if errors.Is(err, io.EOF) {
		return // a record of a type this version does not know
	}
	if err != nil {
		var se *tracelog.SyntaxError
		msg := err.Error()
		if errors.As(err, &se) {
			msg = se.Err.Error()
		}
		st.problem(lineNo, "", frames.Problem{Code: ProblemTrace, Message: msg})
		return
	}
	rec := *r
	switch rec.Type {
	case tracelog.TypeSession:
		st.end()
		st.reset()
	case tracelog.TypeEnd:
		st.end()
		st.reset()
	case tracelog.TypeFrame:
		dir := rec.Dir
		if dir != frames.In && dir != frames.Out {
			st.problem(lineNo, "", frames.Problem{Code: ProblemTrace, Pointer: "/dir", Message: fmt.Sprintf("frame record with direction %q", dir)})
			return
		}
		st.frame(lineNo, dir, false, rec.Line(), rec.Truncated)
	}
}

func (st *stream) problem(lineNo int, method string, p frames.Problem) {
	st.report(Problem{File: st.name, Line: lineNo, Method: method, Code: p.Code, Pointer: p.Pointer, Message: p.Message})
}

// end reports the requests of the session never answered.
func (st *stream) end() {
	for _, p := range st.cls.Unanswered() {
		st.problem(st.lines[p.Seq], p.Method, frames.Problem{Code: frames.ProblemUnanswered, Pointer: "/id",
			Message: fmt.Sprintf("request id %s is never answered", p.ID)})
	}
}

func (st *stream) frame(lineNo int, dir frames.Direction, undirected bool, line []byte, truncated bool) {
	st.stats.Frames++
	st.seq++
	var f frames.Frame
	if undirected {
		f = st.cls.ClassifyUndirected(st.seq, time.Time{}, line)
	} else {
		f = st.cls.Classify(st.seq, dir, time.Time{}, line, truncated)
	}
	if f.Kind == frames.Request {
		st.lines[st.seq] = lineNo
	}
	if truncated {
		st.stats.Truncated++
		return
	}
	for _, p := range f.Problems {
		st.problem(lineNo, f.Method, p)
	}
	if len(f.Problems) > 0 || f.Body == nil || f.Method == "" {
		return
	}
	var loc string
	switch f.Kind {
	case frames.Request, frames.Notification, frames.Response:
		m := frames.Lookup(f.Family, f.Method, f.Qualifier)
		if m == nil {
			return
		}
		ms, ok := st.v.methods[methodKey{packages[m.Family], m.Info.Go}]
		if !ok {
			return
		}
		loc = ms.Params
		if f.Kind == frames.Response {
			loc = ms.Result
		}
	default:
		return
	}
	if loc == "" {
		return
	}
	st.stats.Checked++
	parsed := st.body.parse(f.Body, true) == nil
	if p, bad := st.checkSchema(f.Family == frames.Harn, loc, f.Body, f.BodyPointer, parsed); bad {
		if f.Value == nil || p.Code != ProblemSchemaValidation || !specschema.HasUnknown(f.Value) {
			st.problem(lineNo, f.Method, p)
			return
		}
		// A union variant or enum value this version does not know: the
		// schema's closed list refuses it, the type keeps it (ACP's and
		// Harn's forward-compatibility rule), and it must round-trip.
		st.stats.Unknown++
	}
	if f.Value == nil {
		return // free-form: the schema is all there is to judge by
	}
	out, err := wire.Marshal(f.Value)
	if err != nil {
		st.problem(lineNo, f.Method, frames.Problem{Code: ProblemRoundTrip, Pointer: f.BodyPointer, Message: "decoded, but not re-encoded: " + err.Error()})
		return
	}
	if bytes.Equal(out, bytes.TrimSpace(f.Body)) {
		return // the same bytes: structurally the same, without building the trees
	}
	orig := f.Body
	if parsed {
		orig = nil // st.body holds it
	}
	if ptr, msg, same := equalTrees(&st.body, orig, &st.reenc, out); !same {
		st.problem(lineNo, f.Method, frames.Problem{Code: ProblemRoundTrip, Pointer: f.BodyPointer + ptr,
			Message: "re-encoded differently by the generated type: " + msg})
	}
}

// checkSchema validates body against the schema at loc and turns a
// failure into a problem at the JSON pointer, within the frame, of the
// deepest value the schema refused. parsed says st.body holds body.
// A Harn stream is judged under Harn's contract, as a Harn connection
// decodes: ACP members Harn moved under _meta.harn are refused there.
func (st *stream) checkSchema(harn bool, loc string, body []byte, prefix string, parsed bool) (frames.Problem, bool) {
	k := checkKey{harn, loc}
	c := st.checks[k]
	if c == nil {
		c = st.v.schemaCheck(harn, st.v.retype(loc))
		st.checks[k] = c
	}
	if c.fails != nil {
		p := *c.fails
		p.Pointer = prefix
		return p, true
	}
	if parsed && c.fast != nil {
		if valid, decided := fastValid(c.fast, &st.body, &st.eval); valid && decided {
			return frames.Problem{}, false
		}
		// Refused (or undecided): the library says where and why.
	}
	return st.v.validateSlow(c.sch, body, prefix)
}

// schemaCheck compiles the schema at loc (as retyped) for a stream.
func (v *Validator) schemaCheck(harn bool, loc string) *schemaCheck {
	schemas := v.schemas
	if harn {
		h := &compiled[2]
		h.once.Do(func() { h.spec, h.err = specschema.LoadUnder(spec.FS, harnpkg.ContractHarn.Name()) })
		if h.err != nil {
			return &schemaCheck{fails: &frames.Problem{Code: ProblemSchemaValidation, Message: h.err.Error()}}
		}
		schemas = h.spec
	}
	sch, err := schemas.Compile(loc)
	if err != nil && strings.HasPrefix(loc, v0122+"#") {
		return &schemaCheck{fails: &frames.Problem{Code: ProblemSchemaValidation,
			Message: fmt.Sprintf("%s is not in ACP v0.12.2's schema: the method is newer", strings.TrimPrefix(loc, v0122+"#/$defs/"))}}
	}
	if err != nil {
		return &schemaCheck{fails: &frames.Problem{Code: ProblemSchemaValidation, Message: fmt.Sprintf("schema %s does not compile: %v", loc, err)}}
	}
	return &schemaCheck{sch: sch, fast: fastSchema(sch)}
}

// validateSlow validates body with the library, whose error places the
// problem.
func (v *Validator) validateSlow(sch *jsonschema.Schema, body []byte, prefix string) (frames.Problem, bool) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	if err != nil {
		return frames.Problem{Code: frames.ProblemMalformed, Pointer: prefix, Message: err.Error()}, true
	}
	err = sch.Validate(doc)
	if err == nil {
		return frames.Problem{}, false
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return frames.Problem{Code: ProblemSchemaValidation, Pointer: prefix, Message: err.Error()}, true
	}
	leaf := deepest(ve)
	ptr := ""
	for _, tok := range leaf.InstanceLocation {
		ptr += "/" + strings.ReplaceAll(strings.ReplaceAll(tok, "~", "~0"), "/", "~1")
	}
	return frames.Problem{Code: ProblemSchemaValidation, Pointer: prefix + ptr,
		Message: leaf.ErrorKind.LocalizedString(v.printer) + " (" + strings.TrimPrefix(leaf.SchemaURL, specschema.Base) + ")"}, true
}

// deepest returns the cause of e whose instance location is the deepest,
// the first of them in order: where the document went wrong, rather than
// the anyOf above it that no alternative satisfied.
func deepest(e *jsonschema.ValidationError) *jsonschema.ValidationError {
	best := e
	for _, c := range e.Causes {
		if d := deepest(c); len(d.InstanceLocation) > len(best.InstanceLocation) || best == e && len(d.InstanceLocation) == len(best.InstanceLocation) {
			best = d
		}
	}
	return best
}

var errTooLong = errors.New("line too long")

// readLine returns the next line (without its newline), errTooLong for
// one over MaxLine (skipped), or io.EOF.
func readLine(br *bufio.Reader, buf *[]byte) ([]byte, error) {
	*buf = (*buf)[:0]
	for {
		chunk, err := br.ReadSlice('\n')
		if len(*buf)+len(chunk) > MaxLine {
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = br.ReadSlice('\n')
			}
			return nil, errTooLong
		}
		*buf = append(*buf, chunk...)
		switch {
		case err == nil:
			return bytes.TrimSuffix(*buf, []byte("\n")), nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && len(*buf) > 0:
			return *buf, nil
		default:
			return nil, err
		}
	}
}
