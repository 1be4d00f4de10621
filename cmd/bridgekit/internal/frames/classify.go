// Package frames tells what the lines of a recorded or proxied stream are:
// which protocol family the stream speaks (Harn's bridge, ACP, AgentPM's
// Harness machine protocol, agentpm-service), each frame's kind, method and
// id, which request each reply answers and how long it took, and what is
// wrong with a frame (not a frame of the family, a body its generated type
// refuses, a reply to no request, a request never answered).
//
// A [Classifier] holds the state of one session: feed it every line of
// both directions in the order they were seen, then ask it for the
// requests still unanswered when the session ends. It decodes with the
// generated packages (their catalogues and types, through families.go), so
// it needs no schema files: a body is checked by decoding it into its
// method's generated type, which checks required members, closed objects,
// JSON kinds and constraints, and a failure is reported at its JSON pointer
// within the frame.
package frames

import (
	"bytes"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/bridgekit/bridgekit/runtime/rpc"
	"github.com/bridgekit/bridgekit/runtime/wire"
)

// Direction says which way a frame went, seen from the traced command:
// In is what its peer wrote to it (its stdin), Out what it wrote (its
// stdout).
type Direction string

const (
	In  Direction = "in"
	Out Direction = "out"
)

// Opposite returns the other direction.
func (d Direction) Opposite() Direction {
	if d == In {
		return Out
	}
	return In
}

// Kind says what a frame is.
type Kind string

const (
	Request      Kind = "request"
	Notification Kind = "notification"
	Response     Kind = "response"
	Error        Kind = "error"
	// Truncated: a line recorded cut short before what settles its kind
	// (a JSON-RPC line whose id may come after a long member). Its
	// method is still read when the cut start shows it.
	Truncated Kind = "truncated"
	// Invalid: not a frame of any known family (not JSON, a JSON value of
	// the wrong shape, an envelope that fails its gates).
	Invalid Kind = "invalid"
)

// Problem codes.
const (
	ProblemMalformed     = "malformed"      // the line is not a frame of its family
	ProblemSchema        = "schema"         // the body does not fit its method's type
	ProblemUnknownMethod = "unknown_method" // a method the family's catalogue does not have
	ProblemUnmatchedID   = "unmatched_id"   // a reply whose id answers no pending request
	ProblemDuplicateID   = "duplicate_id"   // a request reusing the id of one still pending
	ProblemUnanswered    = "unanswered"     // a request never answered (end of session)
	ProblemTooManyCalls  = "too_many_pending"
)

// A Problem is something wrong with a frame. Pointer is the JSON pointer
// within the frame (RFC 6901) where it was found, when there is one.
type Problem struct {
	Code    string `json:"code"`
	Pointer string `json:"pointer,omitempty"`
	Message string `json:"message"`
}

// Frame is what the classifier made of one line.
type Frame struct {
	Family Family
	// Dir is the frame's direction: as given to Classify, or as
	// ClassifyUndirected inferred it.
	Dir       Direction
	Kind      Kind
	Method    string // for a reply, its request's method
	Qualifier string // agentpm-service's service role
	ID        string // the raw JSON of the id, "" when none
	// ReplyTo is the sequence number of the request a reply answers (0 if
	// none), and Latency the time since that request.
	ReplyTo  int64
	Latency  time.Duration
	Problems []Problem
	// Body is the frame's params, result or payload as it is in the line
	// (nil when it has none), BodyPointer its JSON pointer within the
	// frame (/params, /result, /payload), and Value what the method's
	// generated type decoded from it (nil when the method has no typed
	// body or the type refused it). Body aliases the line given.
	Body        []byte
	BodyPointer string
	Value       any

	check deferred // the check Classify left to Check
}

// deferred is a schema check a classifier with DeferChecks left undone.
type deferred struct {
	family Family
	t      reflect.Type // nil: none
	body   []byte
	at     int // where the check's problem goes in Problems, to keep their order
}

// Check runs the schema check that a classifier with DeferChecks left to
// it, if any, adding its problem or setting Value as Classify would have.
// It reads only the frame: frames of one session may be checked on
// several goroutines at once.
func (f *Frame) Check() {
	d := f.check
	if d.t == nil {
		return
	}
	f.check = deferred{}
	v, p, bad := check(d.family, d.t, d.body, f.BodyPointer)
	if !bad {
		f.Value = v
		return
	}
	f.Problems = slices.Insert(f.Problems, min(d.at, len(f.Problems)), p)
}

// checkBody checks f's body against t now, or leaves it to Check with a
// copy of body: a codec's slow path may hand out bodies in a buffer the
// next line reuses.
func (c *Classifier) checkBody(f *Frame, t reflect.Type, body []byte) {
	if !c.DeferChecks {
		f.check = deferred{f.Family, t, body, len(f.Problems)}
		f.Check()
		return
	}
	f.check = deferred{f.Family, t, bytes.Clone(body), len(f.Problems)}
}

// Pending is a request not yet answered.
type Pending struct {
	Seq    int64     `json:"seq"`
	Dir    Direction `json:"dir"`
	Method string    `json:"method"`
	ID     string    `json:"id"` // raw JSON of the id
	At     time.Time `json:"time"`
}

// MaxPending bounds the requests a classifier tracks at once; a request
// beyond it is reported (too_many_pending) and its reply will be unmatched.
const MaxPending = 65536

type pendingKey struct {
	dir Direction
	id  string
}

type pending struct {
	Pending
	qualifier string
}

// Classifier classifies the frames of one session. It is not safe for
// concurrent use.
type Classifier struct {
	// DeferChecks leaves each frame's schema check (decoding its body into
	// the method's generated type) to Frame.Check, which may run on
	// another goroutine: what must happen in order (pairing, latency, the
	// session's family) is done by Classify, the costly check need not be.
	DeferChecks bool

	family  Family
	codecs  map[Family]rpc.Codec
	pending map[pendingKey]pending
	msg     rpc.Message
	// initiator is, for ClassifyUndirected, the side that sent the first
	// request or notification of a known method: its frames go In.
	initiator string
	// sniffDec reads lines for sniff; reused, it keeps the buffers and
	// name sets a new decoder would allocate for every line.
	sniffDec *jsontext.Decoder
	sniffRd  bytes.Reader
}

// New returns a classifier for a session whose family is not known yet.
// Pass a family to fix it (a --protocol flag, say); Unknown detects it.
func New(family Family) *Classifier {
	return &Classifier{family: family, codecs: map[Family]rpc.Codec{}, pending: map[pendingKey]pending{}}
}

// Family returns the session's family as known so far.
func (c *Classifier) Family() Family { return c.family }

func (c *Classifier) codec(f Family) rpc.Codec {
	if cd := c.codecs[f]; cd != nil {
		return cd
	}
	cd := indexes[f].codec()
	c.codecs[f] = cd
	return cd
}

// Classify classifies one line (without its newline) of direction dir, seen
// at time at, the seq'th frame of the session. truncated says that line is
// only the start of a longer line: its kind and id are then read from what
// is there, and it is not checked.
func (c *Classifier) Classify(seq int64, dir Direction, at time.Time, line []byte, truncated bool) Frame {
	return c.classify(seq, dir, false, at, line, truncated)
}

// ClassifyUndirected is Classify for a stream recorded without directions
// (raw NDJSON of both peers): a request or notification goes In when the
// side that sends its method is the side that sent the session's first
// one, Out otherwise; a reply goes opposite the pending request its id
// names (see replyDir when both directions have one pending).
func (c *Classifier) ClassifyUndirected(seq int64, at time.Time, line []byte) Frame {
	return c.classify(seq, In, true, at, line, false)
}

// senderDir is the direction of a request or notification of method m
// sent by its catalogue sender, for ClassifyUndirected.
func (c *Classifier) senderDir(m *Method) Direction {
	if m == nil || m.Info.From == "" {
		return In
	}
	if c.initiator == "" {
		c.initiator = m.Info.From
	}
	if m.Info.From == c.initiator {
		return In
	}
	return Out
}

// replyDir is the direction of a reply with id and body, for
// ClassifyUndirected. When both directions have a request of that id
// pending (both peers number their requests alike), the reply answers the
// one whose result type takes its body; when both or neither do, the
// newer one (a call made while the other is running is answered first).
func (c *Classifier) replyDir(f *Frame, body []byte) Direction {
	in, inOK := c.pending[pendingKey{In, f.ID}]
	out, outOK := c.pending[pendingKey{Out, f.ID}]
	switch {
	case inOK && !outOK:
		return Out
	case outOK && !inOK:
		return In
	case !inOK:
		return Out
	}
	fits := func(p pending) bool {
		if f.Kind != Response || body == nil {
			return false
		}
		m := Lookup(f.Family, p.Method, p.qualifier)
		if m == nil || m.Result == nil {
			return false
		}
		_, err := decode(f.Family, m.Result, body)
		return err == nil
	}
	inFits, outFits := fits(in), fits(out)
	if inFits != outFits {
		if inFits {
			return Out
		}
		return In
	}
	if in.Seq > out.Seq {
		return Out
	}
	return In
}

func (c *Classifier) classify(seq int64, dir Direction, infer bool, at time.Time, line []byte, truncated bool) (f Frame) {
	defer func() { f.Dir = dir }()
	line = bytes.TrimSuffix(line, []byte("\r"))
	var fam Family
	var members topMembers
	if (c.family == ACP || c.family == Harn) && !bytes.Contains(line, []byte(`"protocol"`)) && !bytes.Contains(line, []byte(`\u`)) {
		// A JSON-RPC session's frame: only an AgentPM envelope's protocol
		// member (which an escape may spell) changes how it is read, and
		// the top-level members matter to AgentPM's body pointers alone.
		fam = c.family
	} else {
		fam, members = c.sniff(line, c.family)
	}
	if c.family == Unknown && fam != Unknown && fam != Harn {
		c.family = fam
	}
	f = Frame{Family: c.familyFor(fam)}
	codec := c.codec(codecFamily(f.Family))
	if truncated {
		hd, ok := codec.(rpc.HeadDecoder)
		if !ok {
			f.Kind = Invalid
			return f
		}
		k, id := hd.DecodeHead(line)
		f.Kind, f.ID = kindOf(k), string(id)
		if k == 0 {
			f.Kind = Truncated
		}
		if f.Kind != Response && f.Kind != Error {
			f.Method = headMethod(line)
		}
		if f.Kind == Truncated || f.Kind == Invalid || f.ID == "" {
			return f
		}
		if f.Kind == Response || f.Kind == Error {
			c.answer(&f, seq, dir, at)
		} else if f.Kind == Request {
			c.ask(&f, seq, dir, at, "")
		}
		return f
	}
	m := &c.msg
	*m = rpc.Message{}
	if err := codec.Decode(line, m); err != nil {
		f.Kind = Invalid
		f.Problems = append(f.Problems, Problem{Code: ProblemMalformed, Message: err.Error()})
		return f
	}
	f.Kind = kindOf(m.Kind)
	f.ID = string(m.ID)
	f.Method = string(m.Method)
	f.Qualifier = string(m.Qualifier)
	f.Body = m.Body
	f.BodyPointer = bodyPointer(f.Family, f.Kind, members)
	switch f.Kind {
	case Request, Notification:
		meth := Lookup(f.Family, f.Method, f.Qualifier)
		if meth == nil && f.Family == ACP && c.family == Unknown || meth == nil && f.Family == ACP && c.family == ACP {
			// A Harn-only method makes the stream Harn's bridge.
			if hm := Lookup(Harn, f.Method, f.Qualifier); hm != nil {
				c.family, f.Family, meth = Harn, Harn, hm
			}
		} else if c.family == Unknown && meth != nil {
			c.family = f.Family
		}
		if infer {
			dir = c.senderDir(meth)
		}
		switch {
		case meth == nil && !strings.HasPrefix(f.Method, "_"):
			f.Problems = append(f.Problems, Problem{Code: ProblemUnknownMethod, Pointer: "/method",
				Message: fmt.Sprintf("%s has no method %q%s", familyName(f.Family), f.Method, qualified(f.Qualifier))})
		case meth != nil && meth.Params != nil && m.Body != nil:
			c.checkBody(&f, meth.Params, m.Body)
		}
		if f.Kind == Request {
			c.ask(&f, seq, dir, at, f.Qualifier)
		}
	case Response, Error:
		if infer {
			dir = c.replyDir(&f, m.Body)
		}
		req, ok := c.answer(&f, seq, dir, at)
		if ok && f.Kind == Response && m.Body != nil {
			if meth := Lookup(f.Family, req.Method, req.qualifier); meth != nil && meth.Result != nil {
				c.checkBody(&f, meth.Result, m.Body)
			}
		}
	}
	return f
}

// familyFor is the family a frame is read as: the session's once known,
// else what the line itself shows.
func (c *Classifier) familyFor(sniffed Family) Family {
	if sniffed == AgentPMMachine || sniffed == AgentPMService {
		return sniffed
	}
	if c.family == Harn || c.family == ACP {
		return c.family
	}
	if sniffed == Unknown {
		if c.family != Unknown {
			return c.family
		}
		return ACP
	}
	return sniffed
}

func codecFamily(f Family) Family {
	if f == Unknown {
		return ACP
	}
	return f
}

func (c *Classifier) ask(f *Frame, seq int64, dir Direction, at time.Time, qualifier string) {
	k := pendingKey{dir, f.ID}
	if _, dup := c.pending[k]; dup {
		f.Problems = append(f.Problems, Problem{Code: ProblemDuplicateID, Pointer: "/id",
			Message: fmt.Sprintf("request id %s is already pending", f.ID)})
		return
	}
	if len(c.pending) >= MaxPending {
		f.Problems = append(f.Problems, Problem{Code: ProblemTooManyCalls,
			Message: fmt.Sprintf("more than %d requests pending: this one is not tracked", MaxPending)})
		return
	}
	c.pending[k] = pending{Pending{Seq: seq, Dir: dir, Method: f.Method, ID: f.ID, At: at}, qualifier}
}

func (c *Classifier) answer(f *Frame, seq int64, dir Direction, at time.Time) (pending, bool) {
	k := pendingKey{dir.Opposite(), f.ID}
	req, ok := c.pending[k]
	if !ok {
		msg := "a reply to no pending request"
		if f.ID != "" && f.ID != "null" {
			msg = fmt.Sprintf("reply id %s answers no pending request", f.ID)
		}
		if f.ID == "null" && f.Kind == Error {
			// JSON-RPC's answer to a request too broken to read its id.
			return req, false
		}
		f.Problems = append(f.Problems, Problem{Code: ProblemUnmatchedID, Pointer: "/id", Message: msg})
		return req, false
	}
	delete(c.pending, k)
	f.Method, f.ReplyTo, f.Latency = req.Method, req.Seq, at.Sub(req.At)
	if f.Qualifier == "" {
		f.Qualifier = req.qualifier
	}
	return req, true
}

// Unanswered returns the requests still pending, in the order they were
// sent. Call it when the session ends.
func (c *Classifier) Unanswered() []Pending {
	out := make([]Pending, 0, len(c.pending))
	for _, p := range c.pending {
		out = append(out, p.Pending)
	}
	slices.SortFunc(out, func(a, b Pending) int { return int(a.Seq - b.Seq) })
	return out
}

func kindOf(k rpc.Kind) Kind {
	switch k {
	case rpc.KindRequest:
		return Request
	case rpc.KindNotification:
		return Notification
	case rpc.KindResponse:
		return Response
	case rpc.KindError:
		return Error
	}
	return Invalid
}

func familyName(f Family) string {
	switch f {
	case ACP:
		return "ACP"
	case Harn:
		return "Harn's bridge"
	case AgentPMMachine:
		return "AgentPM's machine protocol"
	case AgentPMService:
		return "agentpm-service"
	}
	return "the stream"
}

func qualified(q string) string {
	if q == "" {
		return ""
	}
	return " for service " + q
}

// topMembers records which of a frame's top-level members are present.
type topMembers struct {
	jsonrpc, payload, result bool
}

// sniff reads a line's top-level member names, and the protocol member of
// an AgentPM envelope. It reads only as far as it needs to decide.
func (c *Classifier) sniff(line []byte, known Family) (Family, topMembers) {
	var tm topMembers
	c.sniffRd.Reset(line)
	if c.sniffDec == nil {
		c.sniffDec = jsontext.NewDecoder(&c.sniffRd)
	} else {
		c.sniffDec.Reset(&c.sniffRd)
	}
	dec := c.sniffDec
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return Unknown, tm
	}
	fam := Unknown
	for dec.PeekKind() == '"' {
		name, err := dec.ReadToken()
		if err != nil {
			break
		}
		switch name.String() {
		case "jsonrpc":
			tm.jsonrpc = true
		case "payload":
			tm.payload = true
		case "result":
			tm.result = true
		case "protocol":
			if dec.PeekKind() == '"' {
				v, err := dec.ReadToken()
				if err != nil {
					return fam, tm
				}
				if f, ok := envelopeProtocols[v.String()]; ok {
					fam = f
				}
				continue
			}
		}
		if err := dec.SkipValue(); err != nil {
			break
		}
	}
	if fam == Unknown && tm.jsonrpc {
		if known == Harn {
			return Harn, tm
		}
		return ACP, tm
	}
	return fam, tm
}

// bodyPointer is the JSON pointer of a frame's body member.
func bodyPointer(f Family, k Kind, tm topMembers) string {
	switch f {
	case AgentPMMachine:
		return "/payload"
	case AgentPMService:
		if k == Response && (tm.result || !tm.payload) {
			return "/result"
		}
		return "/payload"
	}
	if k == Response {
		return "/result"
	}
	return "/params"
}

// check decodes body into a new value of t, returned, and turns a refusal
// into a schema problem at its JSON pointer within the frame.
func check(f Family, t reflect.Type, body []byte, prefix string) (any, Problem, bool) {
	v, err := decode(f, t, body)
	if err == nil {
		return v, Problem{}, false
	}
	// The place is the pointer; the message says why, in wire terms.
	return nil, Problem{Code: ProblemSchema, Pointer: prefix + wire.Pointer(err), Message: wire.Reason(err)}, true
}

// headMethod returns the top-level method member of a cut line when the
// cut comes after it, else "".
func headMethod(head []byte) string {
	dec := jsontext.NewDecoder(bytes.NewReader(head))
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return ""
	}
	for dec.PeekKind() == '"' {
		name, err := dec.ReadToken()
		if err != nil {
			return ""
		}
		if name.String() == "method" && dec.PeekKind() == '"' {
			v, err := dec.ReadToken()
			if err != nil {
				return ""
			}
			return v.String()
		}
		if err := dec.SkipValue(); err != nil {
			return ""
		}
	}
	return ""
}

// CheckBody checks body, the params of method (reply false) or its result
// (reply true) in family f, against the method's generated type, as
// Classify checks a frame's body. It returns the problem, with its JSON
// pointer relative to the body, and whether there is one; a method the
// catalogue does not have, or whose body is free-form, has none.
func CheckBody(f Family, method, qualifier string, reply bool, body []byte) (Problem, bool) {
	meth := Lookup(f, method, qualifier)
	if meth == nil {
		return Problem{}, false
	}
	t := meth.Params
	if reply {
		t = meth.Result
	}
	if t == nil {
		return Problem{}, false
	}
	_, p, bad := check(f, t, body, "")
	return p, bad
}
