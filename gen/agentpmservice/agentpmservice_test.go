package agentpmservice_test

// Hand-written tests of the generated agentpm-service types, against
// AgentPM's own Harness knowledge fixtures.

import (
	stdjson "encoding/json"
	"errors"
	"os"
	"reflect"
	"testing"

	"github.com/go-json-experiment/json"

	"github.com/bridgekit/bridgekit/gen/agentpmservice"
	"github.com/bridgekit/bridgekit/runtime/wire"
	"github.com/bridgekit/bridgekit/runtime/wire/wiretest"
)

const fixtures = "../../../shared/fixtures/agentpm/harness/knowledge/"

func missingShared(t *testing.T, err error) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatalf("reference material missing in CI: %v", err)
	}
	t.Skipf("reference material not present: %v", err)
}

func readFixture(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(fixtures + name)
	if err != nil {
		missingShared(t, err)
	}
	return data
}

func sameJSON(t *testing.T, a, b []byte) bool { return wiretest.EqualJSON(t, a, b) }

// roundTrip decodes doc into v, re-encodes it and checks the result is the
// same JSON.
func roundTrip(t *testing.T, doc []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(doc, v); err != nil {
		t.Fatalf("%T: decode: %v\n%s", v, err, doc)
	}
	out, err := json.Marshal(v, wire.Fidelity)
	if err != nil || !sameJSON(t, doc, out) {
		t.Fatalf("%T: round trip changed (%v)\n in: %s\nout: %s", v, err, doc, out)
	}
}

func TestKnowledgeFixturesRoundTrip(t *testing.T) {
	var req agentpmservice.RetrievePayload
	roundTrip(t, readFixture(t, "knowledge_runtime_request.json"), &req)
	r := req.Request
	if r.Package != "@zack/docs" || r.Mode != agentpmservice.KnowledgeRequestModeVectorQuery || *r.TopK != 3 || *r.ScoreThreshold != 0.72 || !*r.ReturnCitations {
		t.Fatalf("request: %+v", r)
	}

	var res agentpmservice.KnowledgeRuntimeResult
	roundTrip(t, readFixture(t, "knowledge_runtime_result.json"), &res)
	if !res.Ok || len(res.Results) != 1 || res.Results[0].Score != 0.93125 || !sameJSON(t, res.Results[0].ChunkMetadata, []byte(`{"section":"runtime"}`)) ||
		len(res.Citations) != 1 || *res.Citations[0].Title != "Harness Guide" {
		t.Fatalf("result: %+v", res)
	}

	var failures map[string]stdjson.RawMessage
	if err := stdjson.Unmarshal(readFixture(t, "typed_failures.json"), &failures); err != nil {
		t.Fatal(err)
	}
	for code, doc := range failures {
		var f agentpmservice.KnowledgeRuntimeResult
		roundTrip(t, doc, &f)
		if f.Ok || f.Error == nil || f.Error.Code != code || f.Error.GetRetryable() {
			t.Fatalf("%s: %+v", code, f)
		}
	}

	var hooks struct {
		Before struct {
			Request stdjson.RawMessage `json:"request"`
		} `json:"before_knowledge_request"`
		After struct {
			Result stdjson.RawMessage `json:"result"`
		} `json:"after_knowledge_retrieval"`
	}
	if err := stdjson.Unmarshal(readFixture(t, "knowledge_hooks.json"), &hooks); err != nil {
		t.Fatal(err)
	}
	roundTrip(t, hooks.Before.Request, new(agentpmservice.KnowledgeRuntimeRequest))
	roundTrip(t, hooks.After.Result, new(agentpmservice.KnowledgeRuntimeResult))
}

func TestEmbeddingFixturesRoundTrip(t *testing.T) {
	var p agentpmservice.EmbedPayload
	roundTrip(t, readFixture(t, "embedding_provider_request.json"), &p)
	if p.Dimensions != 3 || !p.Normalized || p.Text == "" {
		t.Fatalf("payload: %+v", p)
	}
	var r agentpmservice.EmbedResult
	roundTrip(t, readFixture(t, "embedding_provider_result.json"), &r)
	if got := r.Embedding(); !reflect.DeepEqual(got, []float64{1, 0, 0}) || r.Object.Vector == nil {
		t.Fatalf("vector result: %+v", r)
	}
	// The other accepted shapes: a bare array, and values.
	for doc, want := range map[string][]float64{`[0.6,0.8]`: {0.6, 0.8}, `{"values":[1,0],"dimensions":2}`: {1, 0}} {
		var v agentpmservice.EmbedResult
		roundTrip(t, []byte(doc), &v)
		if got := v.Embedding(); !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: %v", doc, got)
		}
	}
	for doc, want := range map[string]error{
		`{"dimensions":3}`: wire.ErrMissingMember, // neither vector nor values
		`"1,0,0"`:          wire.ErrWrongKind,
		`[1,"x"]`:          wire.ErrWrongKind,
	} {
		var v agentpmservice.EmbedResult
		if err := json.Unmarshal([]byte(doc), &v); !errors.Is(err, want) {
			t.Errorf("%s: got %v, want %v", doc, err, want)
		}
	}
}

func TestHandshakes(t *testing.T) {
	var k agentpmservice.KnowledgeInitialize
	if err := json.Unmarshal([]byte(`{"role":"embedding","registry_id":"kb","protocol_version":1,"packages":[]}`), &k); !errors.Is(err, wire.ErrConstraint) {
		t.Fatalf("the role is fixed: %v", err)
	}
	if err := json.Unmarshal([]byte(`{"role":"knowledge","registry_id":"kb","protocol_version":2,"packages":[]}`), &k); !errors.Is(err, wire.ErrConstraint) {
		t.Fatalf("the protocol version is fixed: %v", err)
	}
	out, err := json.Marshal(agentpmservice.KnowledgeInitialize{RegistryID: "kb"})
	if err != nil || string(out) != `{"role":"knowledge","registry_id":"kb","protocol_version":1,"packages":[]}` {
		t.Fatalf("consts are always written: %s %v", out, err)
	}
	var e agentpmservice.EmbeddingReadiness
	if err := json.Unmarshal([]byte(`{"embedding_spaces":[]}`), &e); !errors.Is(err, wire.ErrConstraint) {
		t.Fatalf("embedding_spaces must not be empty: %v", err)
	}
	var s agentpmservice.EmbeddingSpace
	if err := json.Unmarshal([]byte(`{"provider":"p","model":"m","dimensions":3,"normalized":false}`), &s); err != nil || s.GetID() != "default" || s.GetMetric() != "cosine" {
		t.Fatalf("defaults: %+v %v", s, err)
	}
}

// The two initialize methods share a wire name; the envelope's service
// member (the catalogue's qualifier) tells them apart.
func TestQualifiedMethods(t *testing.T) {
	byGo := map[string]string{}
	for _, m := range agentpmservice.Methods {
		byGo[m.Go] = m.Wire
	}
	if byGo["InitializeKnowledge"] != "initialize" || byGo["InitializeEmbedding"] != "initialize" || byGo["Retrieve"] != "retrieve" || byGo["Embed"] != "embed" {
		t.Fatalf("methods: %v", byGo)
	}
}
