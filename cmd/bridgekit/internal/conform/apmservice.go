package conform

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/frames"
	"github.com/bridgekit/bridgekit/runtime/envelope"
)

// AgentPMService is conform as the Harness's client of an agentpm-service
// process provider: it handshakes for the role the provider serves
// (Config.Role), calls each of the role's catalogue methods with valid
// payloads, and sends the bad frames the protocol's gates must refuse.
var AgentPMService = &Side{
	Name:   "agentpm-service",
	Family: frames.AgentPMService,
	Doc:    "conform plays the Harness against an agentpm-service provider (one role, --role)",
	Scenarios: func(cfg *Config) []Scenario {
		return newAPMService(cfg.Role).scenarios()
	},
	// A provider sends no requests; none is answered.
	Respond: func(Received) []byte { return nil },
}

// ServiceRoles are the agentpm-service roles the side knows, in the
// order they are listed.
var ServiceRoles = []string{"knowledge", "memory", "embedding", "approval", "hook"}

// registryID is the registry id conform's handshake asks for.
const registryID = "conform"

type apmService struct {
	role string
	// peer is the implementation the handshake was made with: a
	// restarted one is handshaken again.
	peer      *Peer
	n         int
	readiness map[string]json.RawMessage
	calls     []serviceCall
}

// serviceCall is one catalogue method called with a valid payload, and
// the checks its result must pass beyond its generated type's.
type serviceCall struct {
	method  string
	payload func(s *apmService) any
	check   func(s *apmService, t *T, r *EnvReply, res json.RawMessage)
	// bad is a payload whose kinds are wrong.
	bad any
}

func newAPMService(role string) *apmService {
	s := &apmService{role: role}
	s.calls = serviceCalls[role]
	return s
}

func (s *apmService) scenarios() []Scenario {
	p := "agentpm-service/"
	ss := []Scenario{
		{p + "before-handshake", "a request before the handshake is refused with protocol_error", s.beforeHandshake},
		{p + "handshake/wrong-role", "an initialize for another role is refused with unsupported_capability", s.wrongRole},
		{p + "handshake/wrong-version", "an initialize of protocol version 2 is refused with protocol_error", s.handshakeWrongVersion},
		{p + "initialize", "the handshake is answered with the role, version 1, the registry id and ready", s.initialize},
	}
	for _, c := range s.calls {
		ss = append(ss, Scenario{p + s.role + "/" + c.method, c.method + " with a valid payload answers its result type", s.call(c)})
	}
	for _, c := range s.calls {
		ss = append(ss, Scenario{p + s.role + "/" + c.method + "/bad-payload", c.method + " with a payload of the wrong kinds is refused with invalid_request", s.badPayload(c)})
	}
	ss = append(ss,
		Scenario{p + "unknown-method", "a method the role does not have is refused with unsupported_capability", s.unknownMethod},
		Scenario{p + "other-role", "another role's method is refused with unsupported_capability", s.otherRole},
		Scenario{p + "wrong-protocol", "a request of another protocol is refused with protocol_error, its id echoed", s.wrongProtocol},
		Scenario{p + "wrong-version", "a request of version 2 is refused with protocol_error, its id echoed", s.wrongVersion},
		Scenario{p + "bad-json", "lines that are not JSON get malformed_frame errors and the provider goes on", s.badJSON},
		Scenario{p + "not-an-envelope", "JSON values that are not envelopes are refused, and the provider goes on", s.notAnEnvelope},
		Scenario{p + "numeric-id", "a request with a numeric id is refused with malformed_frame", s.numericID},
		Scenario{p + "opaque-id", "ids with quotes, slashes, non-ASCII text and 300 bytes are echoed exactly", s.opaqueID},
		Scenario{p + "large-line", "a 1 MiB request line is read whole and answered", s.largeLine},
		Scenario{p + "duplicate-id", "two requests with the same id are each answered once, with that id", s.duplicateID},
		Scenario{p + "interleaved", "requests sent together are all answered, matched by id", s.interleaved},
		Scenario{p + "end-of-input", "at the end of its input the provider answers what it read and exits 0", s.endOfInput},
	)
	return ss
}

// nextID returns a fresh request id in the Harness's form,
// <role>-<registry id>-<n>.
func (s *apmService) nextID() string {
	s.n++
	return fmt.Sprintf("%s-%s-%d", s.role, registryID, s.n)
}

func (s *apmService) env(kind, id, service, method string, payload any) Env {
	if payload == nil {
		payload = json.RawMessage("null")
	}
	return Env{Protocol: envelope.Service.Name, Version: envelope.Service.Version, Kind: kind, ID: id, Service: service, Method: method, Payload: payload}
}

// request is a request of the role's method.
func (s *apmService) request(method string, payload any) Env {
	return s.env("request", s.nextID(), s.role, method, payload)
}

// initPayload is the handshake's payload for role: role, registry id,
// protocol version and the role's own data.
func initPayload(role string) map[string]any {
	p := map[string]any{"role": role, "registry_id": registryID, "protocol_version": 1}
	switch role {
	case "knowledge":
		p["packages"] = []any{}
	case "memory":
		p["spaces"] = []any{}
	case "hook":
		p["hooks"] = hookIDs
	case "model":
		p["model"] = "conform-model"
	}
	return p
}

// ready makes sure the current implementation has been handshaken: a
// restarted one gets the handshake again (its answer is checked, in the
// scenario that needed it).
func (s *apmService) ready(ctx context.Context, t *T) bool {
	if s.peer == t.peer {
		return true
	}
	r := t.CallEnv(ctx, s.env("initialize", s.nextID(), s.role, "initialize", initPayload(s.role)))
	if !t.checkEnvGates(r, envelope.Service, s.role) {
		return false
	}
	if _, ok := t.ExpectEnvResult(r, "initialized", "response"); !ok {
		return false
	}
	s.peer = t.peer
	return true
}

// expectRefusal sends e and checks that it is refused with the standard
// failure c (and that the provider still answers afterwards).
func (s *apmService) expectRefusal(ctx context.Context, t *T, e Env, c int64) {
	r := t.CallEnv(ctx, e)
	if r == nil {
		return
	}
	t.checkEnvGates(r, envelope.Service, "")
	if t.ExpectEnvError(r, true, envCode(envelope.Service, c)) {
		t.Note("%s", r.ErrorCode())
	}
	// The classifier reads a refused frame's reply as a reply to a
	// frame it could not track.
	t.Tolerate(frames.ProblemUnmatchedID)
}

func (s *apmService) beforeHandshake(ctx context.Context, t *T) {
	if s.peer == t.peer {
		t.NotImplemented("the provider was handshaken already")
		return
	}
	c := s.firstCall()
	s.expectRefusal(ctx, t, s.request(c.method, c.payload(s)), failProtocol)
}

func (s *apmService) wrongRole(ctx context.Context, t *T) {
	other := s.otherRoleName()
	s.expectRefusal(ctx, t, s.env("initialize", s.nextID(), other, "initialize", initPayload(other)), failUnsupported)
}

func (s *apmService) handshakeWrongVersion(ctx context.Context, t *T) {
	e := s.env("initialize", s.nextID(), s.role, "initialize", initPayload(s.role))
	e.Version = 2
	s.expectRefusal(ctx, t, e, failProtocol)
}

func (s *apmService) initialize(ctx context.Context, t *T) {
	id := s.nextID()
	r := t.CallEnv(ctx, s.env("initialize", id, s.role, "initialize", initPayload(s.role)))
	if r == nil {
		return
	}
	t.checkEnvGates(r, envelope.Service, s.role)
	res, ok := t.ExpectEnvResult(r, "initialized", "response")
	if !ok {
		return
	}
	var rd map[string]json.RawMessage
	if json.Unmarshal(res, &rd) != nil {
		t.Fail(Problem{Method: "initialize", Frame: r.Seq, Pointer: "/result", Code: "rule", Message: "the readiness is not an object"})
		return
	}
	s.peer, s.readiness = t.peer, rd
	fail := func(member, format string, args ...any) {
		t.Fail(Problem{Method: "initialize", Frame: r.Seq, Pointer: "/result/" + member, Code: "rule", Message: fmt.Sprintf(format, args...)})
	}
	if v, ok := rd["role"]; ok && str(v) != s.role {
		fail("role", "role %s, want %q", clip(string(v)), s.role)
	}
	if v, ok := rd["protocol_version"]; ok && string(v) != "1" {
		fail("protocol_version", "protocol_version %s, want 1", clip(string(v)))
	}
	if v, ok := rd["registry_id"]; ok && str(v) != registryID {
		fail("registry_id", "registry_id %s, want the requested %q", clip(string(v)), registryID)
	}
	if v, ok := rd["ready"]; ok && string(v) == "false" {
		fail("ready", "ready is false: the provider is unavailable")
	}
	if s.role == "embedding" {
		if sp := s.space(); sp == nil {
			fail("embedding_spaces", "no embedding space with a provider, a model and dimensions")
		}
	}
	t.Note("%s, %d members", r.Kind, len(rd))
}

func (s *apmService) call(c serviceCall) func(context.Context, *T) {
	return func(ctx context.Context, t *T) {
		if !s.ready(ctx, t) {
			return
		}
		r := t.CallEnv(ctx, s.request(c.method, c.payload(s)))
		if r == nil {
			return
		}
		t.checkEnvGates(r, envelope.Service, s.role)
		res, ok := t.ExpectEnvResult(r, "response", "initialized")
		if ok && c.check != nil {
			c.check(s, t, r, res)
		}
	}
}

func (s *apmService) badPayload(c serviceCall) func(context.Context, *T) {
	return func(ctx context.Context, t *T) {
		if !s.ready(ctx, t) {
			return
		}
		s.expectRefusal(ctx, t, s.request(c.method, c.bad), failInvalid)
	}
}

func (s *apmService) firstCall() serviceCall {
	if len(s.calls) > 0 {
		return s.calls[0]
	}
	return serviceCall{method: "conform_no_such_method", payload: func(*apmService) any { return map[string]any{} }}
}

func (s *apmService) otherRoleName() string {
	if s.role == "approval" {
		return "knowledge"
	}
	return "approval"
}

func (s *apmService) unknownMethod(ctx context.Context, t *T) {
	if s.ready(ctx, t) {
		s.expectRefusal(ctx, t, s.request("conform_no_such_method", map[string]any{}), failUnsupported)
	}
}

func (s *apmService) otherRole(ctx context.Context, t *T) {
	if !s.ready(ctx, t) {
		return
	}
	other := s.otherRoleName()
	oc := serviceCalls[other][0]
	s.expectRefusal(ctx, t, s.env("request", s.nextID(), other, oc.method, oc.payload(s)), failUnsupported)
}

func (s *apmService) wrongProtocol(ctx context.Context, t *T) {
	if !s.ready(ctx, t) {
		return
	}
	c := s.firstCall()
	e := s.request(c.method, c.payload(s))
	e.Protocol = envelope.Machine.Name
	s.expectRefusal(ctx, t, e, failProtocol)
}

func (s *apmService) wrongVersion(ctx context.Context, t *T) {
	if !s.ready(ctx, t) {
		return
	}
	c := s.firstCall()
	e := s.request(c.method, c.payload(s))
	e.Version = 2
	s.expectRefusal(ctx, t, e, failProtocol)
}

// anyRefusals checks that every frame received is an error frame of one of
// codes (a refusal of a line too broken to name its id may carry none).
func (s *apmService) anyRefusals(t *T, codes ...string) {
	for _, rec := range t.Received() {
		e, ok := parseEnv(rec.Raw)
		if !ok || str(e.Kind) == "event" || strings.HasPrefix(str(e.ID), probeIDPrefix) {
			continue
		}
		t.ExpectEnvError(&EnvReply{Received: rec, Env: e, Method: "", Kind: str(e.Kind)}, true, codes...)
	}
}

const probeIDPrefix = "conform-probe-"

// alive checks that the provider still answers, with a request of a
// method no role has (any answer will do).
func (s *apmService) alive(ctx context.Context, t *T) bool {
	s.n++
	return t.CallEnv(ctx, s.env("request", probeIDPrefix+strconv.Itoa(s.n), s.role, probeMethod, map[string]any{})) != nil
}

func (s *apmService) badJSON(ctx context.Context, t *T) {
	if !s.ready(ctx, t) {
		return
	}
	t.Tolerate(frames.ProblemUnmatchedID)
	for _, line := range [][]byte{
		[]byte(`{not json`),
		[]byte(`{"protocol":"agentpm-service","version":1,"kind":"request","id":"` + s.nextID() + `","service":"` + s.role + `","payload":{`),
		{'{', '"', 0xff, 0xfe, '"', ':', '1', '}'},
	} {
		if !t.SendRaw(ctx, "", line) {
			return
		}
	}
	if !s.alive(ctx, t) {
		return
	}
	s.anyRefusals(t, envCode(envelope.Service, failMalformed))
}

func (s *apmService) notAnEnvelope(ctx context.Context, t *T) {
	if !s.ready(ctx, t) {
		return
	}
	t.Tolerate(frames.ProblemUnmatchedID)
	for _, line := range []string{`42`, `"conform"`, `[]`, `null`, `{}`, `{"protocol":"agentpm-service","version":1,"kind":"teleport","id":"` + s.nextID() + `","service":"` + s.role + `"}`} {
		if !t.SendRaw(ctx, "", []byte(line)) {
			return
		}
	}
	if !s.alive(ctx, t) {
		return
	}
	s.anyRefusals(t, envCode(envelope.Service, failMalformed), envCode(envelope.Service, failProtocol))
}

func (s *apmService) numericID(ctx context.Context, t *T) {
	if !s.ready(ctx, t) {
		return
	}
	t.Tolerate(frames.ProblemUnmatchedID)
	c := s.firstCall()
	e := s.request(c.method, c.payload(s))
	e.ID = 7
	if !t.SendEnv(ctx, e) || !s.alive(ctx, t) {
		return
	}
	var refused bool
	for _, rec := range t.Received() {
		g, ok := parseEnv(rec.Raw)
		if !ok || strings.HasPrefix(str(g.ID), probeIDPrefix) || str(g.Kind) == "event" {
			continue
		}
		r := &EnvReply{Received: rec, Env: g, Method: c.method, Kind: str(g.Kind)}
		refused = true
		if t.ExpectEnvError(r, true, envCode(envelope.Service, failMalformed)) {
			t.Note("%s", r.ErrorCode())
		}
	}
	if !refused {
		t.Failf(c.method, 0, "no_answer", "a request with the numeric id 7 got no error frame")
	}
}

func (s *apmService) opaqueID(ctx context.Context, t *T) {
	if !s.ready(ctx, t) {
		return
	}
	c := s.firstCall()
	for _, id := range []string{
		`conform "quoted" \ back/slash`,
		"conform-é-✓-" + strings.Repeat("x", 300),
	} {
		e := s.request(c.method, c.payload(s))
		e.ID = id
		if !t.SendEnv(ctx, e) {
			return
		}
		rec, ok := t.WaitFor(ctx, func(rec Received) bool {
			g, ok := parseEnv(rec.Raw)
			return ok && str(g.ID) == id && str(g.Kind) != "event"
		})
		if !ok {
			t.Failf(c.method, 0, "id", "no answer whose id is %q exactly: %s", clip(id), t.why(ctx))
			return
		}
		g, _ := parseEnv(rec.Raw)
		want, _ := json.Marshal(id)
		if !isASCII(id) || string(g.ID) == string(want) {
			continue
		}
		// The same string, written otherwise: allowed (the id's value is
		// what is opaque), but worth a look.
		t.Note("id %s re-encoded as %s", want, clip(string(g.ID)))
	}
}

func isASCII(s string) bool {
	for i := range len(s) {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

func (s *apmService) largeLine(ctx context.Context, t *T) {
	if !s.ready(ctx, t) {
		return
	}
	e := s.request("conform_no_such_method", map[string]any{"padding": strings.Repeat("x", 1<<20)})
	r := t.CallEnv(ctx, e)
	if r == nil {
		return
	}
	t.checkEnvGates(r, envelope.Service, s.role)
	t.ExpectEnvError(r, true, envCode(envelope.Service, failUnsupported))
}

func (s *apmService) duplicateID(ctx context.Context, t *T) {
	if !s.ready(ctx, t) {
		return
	}
	t.Tolerate(frames.ProblemDuplicateID)
	t.Tolerate(frames.ProblemUnmatchedID)
	c := s.firstCall()
	e := s.request(c.method, c.payload(s))
	if !t.SendEnv(ctx, e) || !t.SendEnv(ctx, e) {
		return
	}
	id, _ := json.Marshal(e.ID)
	count := func() (n int) {
		for _, rec := range t.Received() {
			if g, ok := parseEnv(rec.Raw); ok && string(g.ID) == string(id) && str(g.Kind) != "event" {
				n++
			}
		}
		return n
	}
	if _, ok := t.WaitFor(ctx, func(Received) bool { return count() >= 2 }); !ok {
		t.Failf(c.method, 0, "no_answer", "%d answers with id %s to the two requests, want 2: %s", count(), id, t.why(ctx))
		return
	}
	t.Settle(ctx, 50*time.Millisecond)
	if n := count(); n != 2 {
		t.Failf(c.method, 0, "duplicate_answer", "%d answers with id %s to two requests", n, id)
	}
}

func (s *apmService) interleaved(ctx context.Context, t *T) {
	if !s.ready(ctx, t) {
		return
	}
	c := s.firstCall()
	var sent []Env
	for range 5 {
		e := s.request(c.method, c.payload(s))
		if !t.SendEnv(ctx, e) {
			return
		}
		sent = append(sent, e)
	}
	for _, e := range sent {
		id, _ := json.Marshal(e.ID)
		r := t.AwaitEnv(ctx, c.method, id)
		if r == nil {
			return
		}
		if _, ok := t.ExpectEnvResult(r, "response", "initialized"); !ok {
			return
		}
	}
}

func (s *apmService) endOfInput(ctx context.Context, t *T) {
	if !s.ready(ctx, t) {
		return
	}
	c := s.firstCall()
	e := s.request(c.method, c.payload(s))
	if !t.SendEnv(ctx, e) {
		return
	}
	t.ExpectExit()
	t.peer.closeInput()
	id, _ := json.Marshal(e.ID)
	if t.AwaitEnv(ctx, c.method, id) == nil {
		return
	}
	grace := t.Config().Grace
	if !t.peer.waitExit(grace) {
		t.Failf("", 0, "no_exit", "still running %v after the end of its input", grace)
		return
	}
	if code := t.peer.exitCode(); code != 0 {
		t.Failf("", 0, "exit_status", "exited with status %d at the end of its input, want 0: %s", code, t.peer.exitDescription())
	}
}

// space returns the first embedding space the readiness advertises.
func (s *apmService) space() *embeddingSpace {
	var spaces []embeddingSpace
	for _, k := range []string{"embedding_spaces", "spaces"} {
		if raw, ok := s.readiness[k]; ok && json.Unmarshal(raw, &spaces) == nil && len(spaces) > 0 {
			break
		}
	}
	if len(spaces) == 0 {
		if raw, ok := s.readiness["capabilities"]; ok {
			var caps struct {
				Spaces []embeddingSpace `json:"embedding_spaces"`
			}
			if json.Unmarshal(raw, &caps) == nil {
				spaces = caps.Spaces
			}
		}
	}
	for _, sp := range spaces {
		if sp.Provider != "" && sp.Model != "" && sp.Dimensions > 0 {
			return &sp
		}
	}
	return nil
}

type embeddingSpace struct {
	Provider   string `json:"provider"`
	Model      string `json:"model"`
	Dimensions int    `json:"dimensions"`
	Normalized bool   `json:"normalized"`
}

// hookIDs are the hook ids of agentpm-service's hook role, in the
// catalogue's order.
var hookIDs = []string{"before_model_request", "before_tool_selection", "before_tool_call", "before_knowledge_request",
	"after_knowledge_retrieval", "before_memory_read", "before_memory_write", "before_memory_operation"}

// The route conform's memory calls use.
const (
	memPackage = "@conform/memory"
	memVersion = "1.0.0"
	memSpace   = "notes"
	memNow     = "2026-01-01T00:00:00Z"
)

var memScope = map[string]any{"user": "conform"}

func memWrite(op, recordID string) map[string]any {
	return map[string]any{"package": memPackage, "package_version": memVersion, "space": memSpace, "space_model": "document",
		"record_type": "note", "schema_version": "1", "scope": memScope, "operation": op, "record_id": recordID,
		"content": map[string]any{"text": "written by bridgekit conform"}, "provenance": map[string]any{"source": "bridgekit-conform"}, "now": memNow}
}

// memEcho checks that a memory result echoes the route (the Harness
// refuses one that does not) and that a failure carries its error.
func memEcho(member, want string) func(s *apmService, t *T, r *EnvReply, res json.RawMessage) {
	return func(s *apmService, t *T, r *EnvReply, res json.RawMessage) {
		var m map[string]json.RawMessage
		if json.Unmarshal(res, &m) != nil {
			return // the classifier reports the shape
		}
		fail := func(ptr, format string, args ...any) {
			t.Fail(Problem{Method: r.Method, Frame: r.Seq, Pointer: "/result/" + ptr, Code: "rule", Message: fmt.Sprintf(format, args...)})
		}
		for k, v := range map[string]string{"package": memPackage, "package_version": memVersion} {
			if str(m[k]) != v {
				fail(k, "%s %s, want the route's %q", k, orAbsent(m[k]), v)
			}
		}
		if member != "" && str(m[member]) != want {
			fail(member, "%s %s, want %q", member, orAbsent(m[member]), want)
		}
		if string(m["ok"]) == "false" {
			if _, has := m["error"]; !has {
				fail("error", "ok is false without an error")
			} else {
				t.Note("ok:false %s", clip(string(m["error"])))
			}
		}
	}
}

// serviceCalls are each role's catalogue methods as conform calls them.
var serviceCalls = map[string][]serviceCall{
	"knowledge": {{
		method: "retrieve",
		payload: func(*apmService) any {
			return map[string]any{"request": map[string]any{"package": "@conform/knowledge", "version": "1.0.0",
				"mode": "vector_query", "query": "how does conform work?", "top_k": 3, "return_citations": true}}
		},
		check: func(s *apmService, t *T, r *EnvReply, res json.RawMessage) {
			var k struct {
				OK      *bool           `json:"ok"`
				Package string          `json:"package"`
				Error   json.RawMessage `json:"error"`
			}
			if json.Unmarshal(res, &k) != nil {
				return
			}
			if k.Package != "@conform/knowledge" {
				t.Fail(Problem{Method: r.Method, Frame: r.Seq, Pointer: "/result/package", Code: "rule", Message: fmt.Sprintf("package %q, want the request's %q", k.Package, "@conform/knowledge")})
			}
			if k.OK != nil && !*k.OK {
				if k.Error == nil {
					t.Fail(Problem{Method: r.Method, Frame: r.Seq, Pointer: "/result/error", Code: "rule", Message: "ok is false without an error"})
				} else {
					t.Note("ok:false %s", clip(string(k.Error)))
				}
			}
		},
		bad: map[string]any{"request": 7},
	}},
	"embedding": {{
		method: "embed",
		payload: func(s *apmService) any {
			sp := s.space()
			if sp == nil {
				sp = &embeddingSpace{Provider: "conform", Model: "conform", Dimensions: 8, Normalized: true}
			}
			return map[string]any{"provider": sp.Provider, "model": sp.Model, "dimensions": sp.Dimensions, "normalized": sp.Normalized, "text": "bridgekit conform"}
		},
		check: func(s *apmService, t *T, r *EnvReply, res json.RawMessage) {
			var vec []float64
			if json.Unmarshal(res, &vec) != nil {
				var o struct {
					Vector []float64 `json:"vector"`
					Values []float64 `json:"values"`
				}
				if json.Unmarshal(res, &o) != nil {
					return
				}
				vec = o.Vector
				if vec == nil {
					vec = o.Values
				}
			}
			sp := s.space()
			if sp == nil {
				return
			}
			fail := func(format string, args ...any) {
				t.Fail(Problem{Method: r.Method, Frame: r.Seq, Pointer: "/result", Code: "rule", Message: fmt.Sprintf(format, args...)})
			}
			if len(vec) != sp.Dimensions {
				fail("%d numbers, want the space's %d dimensions", len(vec), sp.Dimensions)
				return
			}
			var sum float64
			for _, v := range vec {
				sum += v * v
			}
			if sp.Normalized && math.Abs(math.Sqrt(sum)-1) > 0.01 {
				fail("the vector's length is %.4f, want 1 (the space is normalized)", math.Sqrt(sum))
			}
		},
		bad: map[string]any{"provider": 7, "model": 7, "dimensions": "eight", "normalized": "yes", "text": 7},
	}},
	"approval": {{
		method: "request_approval",
		payload: func(*apmService) any {
			return map[string]any{"checkpoint": map[string]any{"id": "conform-checkpoint", "type": "approval", "before_phase": "conform", "on_reject": "stop"}}
		},
		check: func(s *apmService, t *T, r *EnvReply, res json.RawMessage) {
			var d struct {
				Decision *string `json:"decision"`
			}
			if json.Unmarshal(res, &d) == nil && d.Decision != nil &&
				!slices.Contains([]string{"approve", "approved", "deny", "denied", "pending"}, *d.Decision) {
				t.Fail(Problem{Method: r.Method, Frame: r.Seq, Pointer: "/result/decision", Code: "rule",
					Message: fmt.Sprintf("decision %q is none of approve, approved, deny, denied, pending (the Harness fails the approval)", *d.Decision)})
			}
		},
		bad: map[string]any{"checkpoint": 7},
	}},
	"memory": {
		{method: "write", payload: func(*apmService) any { return map[string]any{"request": memWrite("upsert", "conform-record")} },
			check: memEcho("operation", "upsert"), bad: map[string]any{"request": 7}},
		{method: "read", payload: func(*apmService) any {
			return map[string]any{"request": map[string]any{"package": memPackage, "package_version": memVersion, "space": memSpace,
				"scope": memScope, "mode": "key", "record_id": "conform-record", "now": memNow}}
		}, check: memEcho("mode", "key"), bad: map[string]any{"request": 7}},
		{method: "count", payload: func(*apmService) any {
			return map[string]any{"request": map[string]any{"package": memPackage, "package_version": memVersion, "space": memSpace, "scope": memScope, "now": memNow}}
		}, check: memEcho("space", memSpace), bad: map[string]any{"request": 7}},
		{method: "store_operation_state", payload: func(*apmService) any {
			return map[string]any{"request": map[string]any{"package": memPackage, "package_version": memVersion, "operation": "conform", "scope": memScope, "now": memNow},
				"state": map[string]any{"step": 1}}
		}, check: memEcho("operation", "conform"), bad: map[string]any{"request": 7, "state": 7}},
		{method: "load_operation_state", payload: func(*apmService) any {
			return map[string]any{"request": map[string]any{"package": memPackage, "package_version": memVersion, "operation": "conform", "scope": memScope, "now": memNow}}
		}, check: memEcho("operation", "conform"), bad: map[string]any{"request": 7}},
		{method: "commit_lifecycle", payload: func(*apmService) any {
			return map[string]any{"request": map[string]any{"package": memPackage, "package_version": memVersion, "operation": "conform",
				"expected_sources": []any{}, "output_writes": []any{memWrite("upsert", "conform-output")}, "source_mutations": []any{},
				"operation_state": map[string]any{"step": 2}, "now": memNow}}
		}, check: memEcho("operation", "conform"), bad: map[string]any{"request": 7}},
	},
	"hook": hookCalls(),
}

// hookPhase is the phase conform's hook inputs name.
var hookPhase = map[string]any{"phase_id": "conform", "phase_objective": "check the provider",
	"completion": map[string]any{"phase_id": "conform", "explicit_outcomes": []any{}, "implicit_complete": true}}

// hookInputs are a valid input of each hook id.
var hookInputs = map[string]any{
	"before_model_request": map[string]any{"run_id": "conform-run", "phase_execution_id": "conform-phase-1", "phase": hookPhase,
		"sections": []any{map[string]any{"number": 1, "title": "CONSUMER / RUN CONTEXT", "content": "conform", "mutable": true}}},
	"before_tool_selection": map[string]any{"phase": hookPhase,
		"candidates": []any{map[string]any{"canonical_id": "conform.echo", "description": "echoes", "source": "agentpm"}}},
	"before_tool_call":         map[string]any{"phase_id": "conform", "tool": "conform.echo", "arguments": map[string]any{"text": "hi"}},
	"before_knowledge_request": map[string]any{"phase_id": "conform", "request": map[string]any{"package": "@conform/knowledge", "version": "1.0.0", "mode": "vector_query", "query": "q"}},
	"after_knowledge_retrieval": map[string]any{"phase_id": "conform", "result": map[string]any{"ok": true, "package": "@conform/knowledge",
		"version": "1.0.0", "mode": "vector_query", "content": "c"}},
	"before_memory_read":      map[string]any{"phase_id": "conform", "package": memPackage, "space": memSpace, "scope": memScope},
	"before_memory_write":     map[string]any{"phase_id": "conform", "package": memPackage, "space": memSpace, "record_type": "note", "scope": memScope, "content": map[string]any{"text": "t"}},
	"before_memory_operation": map[string]any{"phase_id": "conform", "package": memPackage, "operation": "conform", "scope": memScope, "source_summary": "s"},
}

// hookDecision checks a hook's decision: continue (with an optional
// patch) or reject.
func hookDecision(s *apmService, t *T, r *EnvReply, res json.RawMessage) {
	var d struct {
		Decision *string `json:"decision"`
	}
	if json.Unmarshal(res, &d) != nil {
		return
	}
	if d.Decision == nil || *d.Decision != "continue" && *d.Decision != "reject" {
		t.Fail(Problem{Method: r.Method, Frame: r.Seq, Pointer: "/result/decision", Code: "rule",
			Message: fmt.Sprintf("decision %s, want \"continue\" or \"reject\" (the Harness fails the hook)", orAbsent(res))})
		return
	}
	t.Note("%s", *d.Decision)
}

func hookCalls() []serviceCall {
	var cs []serviceCall
	for _, id := range append(slices.Clone(hookIDs), "invoke") {
		hook := id
		if id == "invoke" {
			hook = "before_tool_call"
		}
		cs = append(cs, serviceCall{method: id,
			payload: func(*apmService) any { return map[string]any{"hook": hook, "input": hookInputs[hook]} },
			check:   hookDecision,
			bad:     map[string]any{"hook": 7, "input": 7}})
	}
	return cs
}
