package agentpmmachine_test

// AgentPM's own documents through the generated types: the six Harness
// knowledge fixtures and every example frame of the contract (the seed)
// decode and encode back to the same JSON, listed one by one.

import (
	"bytes"
	"context"
	stdjson "encoding/json"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/bridgekit/bridgekit/gen/agentpmcli"
	"github.com/bridgekit/bridgekit/gen/agentpmmachine"
	"github.com/bridgekit/bridgekit/gen/agentpmservice"
	"github.com/bridgekit/bridgekit/runtime/envelope"
	"github.com/bridgekit/bridgekit/runtime/rpc"
	"github.com/bridgekit/bridgekit/runtime/wire"
	"github.com/bridgekit/bridgekit/runtime/wire/wiretest"
)

const (
	seedFile       = "../../../shared/seeds/004_3ba54f5d2d8bad19.txt"
	fixtureDir     = "../../../shared/fixtures/agentpm/harness/knowledge/"
	seedFramesFile = "../../testdata/agentpm/seed_frames.json"
)

// missingShared skips a test whose reference material is absent, except in
// CI, where it is always laid beside the checkout.
func missingShared(t *testing.T, err error) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatalf("reference material missing in CI: %v", err)
	}
	t.Skipf("reference material not present: %v", err)
}

func sameJSON(t *testing.T, a, b []byte) bool { return wiretest.EqualJSON(t, a, b) }

// seedBlocks returns the JSON documents the seed shows: every block that
// starts with a line "{" and ends with a line "}".
func seedBlocks(text string) [][]byte {
	var out [][]byte
	var cur []string
	for _, line := range strings.Split(text, "\n") {
		switch {
		case cur == nil && line == "{":
			cur = []string{line}
		case cur != nil:
			cur = append(cur, line)
			if line == "}" {
				out = append(out, []byte(strings.Join(cur, "\n")))
				cur = nil
			}
		}
	}
	return out
}

type seedFrame struct {
	Name, Format, What string
	Document           stdjson.RawMessage
}

func readSeedFrames(t *testing.T) []seedFrame {
	t.Helper()
	data, err := os.ReadFile(seedFramesFile)
	if err != nil {
		t.Fatal(err)
	}
	var frames []seedFrame
	if err := stdjson.Unmarshal(data, &frames); err != nil {
		t.Fatal(err)
	}
	return frames
}

// The project's copy of the seed's examples is the seed's, all of them, in
// order.
func TestSeedFramesAreTheSeeds(t *testing.T) {
	text, err := os.ReadFile(seedFile)
	if err != nil {
		missingShared(t, err)
	}
	blocks := seedBlocks(string(text))
	frames := readSeedFrames(t)
	if len(blocks) != 5 || len(frames) != len(blocks) {
		t.Fatalf("the seed shows %d documents, testdata/agentpm/seed_frames.json holds %d", len(blocks), len(frames))
	}
	for i, b := range blocks {
		if !sameJSON(t, b, frames[i].Document) {
			t.Errorf("%s differs from the seed's document %d:\n%s", frames[i].Name, i, b)
		}
	}
}

// roundTripAs decodes a document into a T, checks that it encodes back to
// the same JSON, and hands the value to check.
func roundTripAs[T any](check func(*testing.T, *T)) func(*testing.T, []byte) {
	return func(t *testing.T, doc []byte) {
		v := new(T)
		if err := json.Unmarshal(doc, v); err != nil {
			t.Fatalf("decode as %T: %v", v, err)
		}
		out, err := json.Marshal(v, wire.Fidelity)
		if err != nil || !sameJSON(t, doc, out) {
			t.Fatalf("%T: round trip changed it (%v)\n in: %s\nout: %s", v, err, doc, out)
		}
		if check != nil {
			check(t, v)
		}
	}
}

// frameRoundTrip decodes an envelope with the protocol's codec, writes it
// back as the engine writes frames (a request's id from the codec's prefix
// and number, a reply echoing its id) and checks it is the same JSON; then
// it hands the message to serve, which dispatches it to a generated
// handler struct.
func frameRoundTrip(p envelope.Protocol, replyTo string, serve func(*testing.T, *rpc.Message)) func(*testing.T, []byte) {
	return func(t *testing.T, doc []byte) {
		var line bytes.Buffer
		if err := stdjson.Compact(&line, doc); err != nil {
			t.Fatal(err)
		}
		var m rpc.Message
		if err := envelope.NewCodec(p, "", "").Decode(line.Bytes(), &m); err != nil {
			t.Fatalf("decode: %v", err)
		}
		h := &rpc.Header{Kind: m.Kind, Method: string(m.Method), Qualifier: string(m.Qualifier)}
		prefix := ""
		switch m.Kind {
		case rpc.KindRequest:
			id, _ := strconv.Unquote(string(m.ID))
			i := strings.LastIndexByte(id, '-') + 1
			prefix = id[:i]
			h.Seq, _ = strconv.ParseUint(id[i:], 10, 64)
		default:
			h.ID, h.Method = rpc.RawID(m.ID), replyTo
		}
		c := envelope.NewCodec(p, prefix, "")
		out := c.AppendTail(append(c.AppendHead(nil, h), m.Body...), h)
		if !sameJSON(t, doc, out) {
			t.Fatalf("re-encoded frame differs\n in: %s\nout: %s", line.Bytes(), out)
		}
		serve(t, &m)
	}
}

// member returns one member of a fixture holding several documents.
func member(name string) func([]byte) ([]byte, error) {
	return func(doc []byte) ([]byte, error) {
		var m map[string]stdjson.RawMessage
		if err := stdjson.Unmarshal(doc, &m); err != nil {
			return nil, err
		}
		return m[name], nil
	}
}

func TestAgentPMDocumentsRoundTrip(t *testing.T) {
	ctx := context.Background()
	embedRequest := new(agentpmservice.EmbedPayload)
	frames := map[string]stdjson.RawMessage{}
	for _, f := range readSeedFrames(t) {
		frames[f.Name] = f.Document
	}
	for _, tc := range []struct {
		name   string
		file   string // under fixtureDir, or "" for a seed frame
		pick   func([]byte) ([]byte, error)
		decode func(*testing.T, []byte)
	}{
		// The six fixtures of AgentPM's Harness (shared/fixtures/agentpm).
		{name: "embedding_provider_request.json", file: "embedding_provider_request.json",
			decode: roundTripAs(func(t *testing.T, p *agentpmservice.EmbedPayload) {
				*embedRequest = *p
				if p.Dimensions != 3 || !p.Normalized || p.Model != "docs-embedding-v1" {
					t.Errorf("payload: %+v", p)
				}
			})},
		{name: "embedding_provider_result.json", file: "embedding_provider_result.json",
			decode: roundTripAs(func(t *testing.T, r *agentpmservice.EmbedResult) {
				if v, err := agentpmservice.CheckEmbedding(embedRequest, r); err != nil || len(v) != 3 || r.Object == nil || r.Object.Vector == nil {
					t.Errorf("the fixture's vector must pass the Harness's checks for the fixture's request: %v %v", v, err)
				}
			})},
		{name: "knowledge_hooks.json before_knowledge_request", file: "knowledge_hooks.json", pick: member("before_knowledge_request"),
			decode: roundTripAs(func(t *testing.T, in *agentpmservice.BeforeKnowledgeRequestInput) {
				if in.PhaseID != "answer" || in.Request.Mode != agentpmservice.KnowledgeRequestModeVectorQuery {
					t.Errorf("input: %+v", in)
				}
			})},
		{name: "knowledge_hooks.json before_knowledge_request_result", file: "knowledge_hooks.json", pick: member("before_knowledge_request_result"),
			decode: roundTripAs(func(t *testing.T, d *agentpmservice.BeforeKnowledgeRequestDecision) {
				if d.Continue == nil || d.Continue.Patch == nil || *d.Continue.Patch.TopK != 3 || d.Tag() != "continue" {
					t.Errorf("decision: %+v", d)
				}
			})},
		{name: "knowledge_hooks.json after_knowledge_retrieval", file: "knowledge_hooks.json", pick: member("after_knowledge_retrieval"),
			decode: roundTripAs(func(t *testing.T, in *agentpmservice.AfterKnowledgeRetrievalInput) {
				if !in.Result.Ok || len(in.Result.Results) != 1 {
					t.Errorf("input: %+v", in)
				}
			})},
		{name: "knowledge_hooks.json after_knowledge_retrieval_result", file: "knowledge_hooks.json", pick: member("after_knowledge_retrieval_result"),
			decode: roundTripAs(func(t *testing.T, d *agentpmservice.AfterKnowledgeRetrievalDecision) {
				if d.Continue == nil || d.Continue.Patch == nil || d.Continue.Patch.Content != nil {
					t.Errorf("decision with an empty patch: %+v", d)
				}
			})},
		{name: "knowledge_runtime_request.json", file: "knowledge_runtime_request.json",
			decode: roundTripAs(func(t *testing.T, p *agentpmservice.RetrievePayload) {
				if p.Request.Package != "@zack/docs" || *p.Request.TopK != 3 {
					t.Errorf("payload: %+v", p)
				}
			})},
		{name: "knowledge_runtime_result.json", file: "knowledge_runtime_result.json",
			decode: roundTripAs(func(t *testing.T, r *agentpmservice.KnowledgeRuntimeResult) {
				if r.Err() != nil || len(r.Citations) != 1 || r.Results[0].Rank != 1 {
					t.Errorf("result: %+v", r)
				}
			})},
		{name: "typed_failures.json knowledge_unavailable", file: "typed_failures.json", pick: member("knowledge_unavailable"),
			decode: roundTripAs(func(t *testing.T, r *agentpmservice.KnowledgeRuntimeResult) {
				if err := r.Err(); !errors.Is(err, agentpmservice.ErrKnowledgeUnavailable) || errors.Is(err, agentpmservice.ErrEmbeddingProviderFailed) {
					t.Errorf("typed failure: %v", err)
				}
			})},
		{name: "typed_failures.json embedding_provider_failed", file: "typed_failures.json", pick: member("embedding_provider_failed"),
			decode: roundTripAs(func(t *testing.T, r *agentpmservice.KnowledgeRuntimeResult) {
				if err := r.Err(); !errors.Is(err, agentpmservice.ErrEmbeddingProviderFailed) {
					t.Errorf("typed failure: %v", err)
				}
			})},

		// Every example frame of the seed (shared/seeds/004_...), from the
		// project's copy of them.
		{name: "seed machine_start_run_request", decode: frameRoundTrip(envelope.Machine, "", func(t *testing.T, m *rpc.Message) {
			var got *agentpmmachine.StartRunParams
			h := &agentpmmachine.HarnessHandlers{StartRun: func(_ context.Context, p *agentpmmachine.StartRunParams) (*agentpmmachine.StartRunResult, error) {
				got = p
				return &agentpmmachine.StartRunResult{}, nil
			}}
			if _, err := h.Handle(ctx, &rpc.Request{Kind: m.Kind, ID: rpc.RawID(m.ID), Method: string(m.Method), Params: m.Body}); err != nil || got == nil {
				t.Fatalf("dispatch to HarnessHandlers.StartRun: %v", err)
			}
			roundTripAs(func(t *testing.T, p *agentpmmachine.StartRunParams) {
				if *p.Input != "Summarize the incident." || *got.Input != *p.Input {
					t.Errorf("params: %+v", p)
				}
			})(t, m.Body)
		})},
		{name: "seed service_retrieve_request", decode: frameRoundTrip(envelope.Service, "", func(t *testing.T, m *rpc.Message) {
			// The seed leaves the payload empty ({}); retrieve needs a request,
			// so the handler is never called and the request is answered
			// invalid_request, naming what is missing.
			h := &agentpmservice.ServiceHandlers{Retrieve: func(context.Context, *agentpmservice.RetrievePayload) (*agentpmservice.KnowledgeRuntimeResult, error) {
				t.Error("called with the seed's empty payload")
				return nil, nil
			}}
			_, err := h.Handle(ctx, &rpc.Request{Kind: m.Kind, ID: rpc.RawID(m.ID), Method: string(m.Method), Qualifier: string(m.Qualifier), Params: m.Body})
			if string(m.Qualifier) != "knowledge" || !errors.Is(err, rpc.ErrInvalidParams) || !strings.Contains(err.Error(), "invalid params: /request: missing required member") {
				t.Errorf("service %s, dispatch: %v", m.Qualifier, err)
			}
		})},
		{name: "seed service_retrieve_response", decode: frameRoundTrip(envelope.Service, agentpmservice.MethodRetrieve, func(t *testing.T, m *rpc.Message) {
			// A response carries result; the seed leaves it empty ({}), which
			// a KnowledgeRuntimeResult is not.
			var r agentpmservice.KnowledgeRuntimeResult
			if err := json.Unmarshal(m.Body, &r); m.Kind != rpc.KindResponse || string(m.Body) != "{}" || !errors.Is(err, wire.ErrMissingMember) {
				t.Errorf("%v %s: %v", m.Kind, m.Body, err)
			}
		})},
		{name: "seed run_machine_success", decode: func(t *testing.T, doc []byte) {
			r, err := agentpmcli.ParseRunOutput(doc)
			out, _ := r.Output()
			if err != nil || r.Err() != nil || r.Success.Tool.Package != "@zack/echo-json" || !sameJSON(t, out, []byte(`{"message":"hello"}`)) {
				t.Fatalf("%+v %v", r, err)
			}
			roundTripAs[agentpmcli.RunResult](nil)(t, doc)
		}},
		{name: "seed run_machine_error", decode: func(t *testing.T, doc []byte) {
			r, err := agentpmcli.ParseRunOutput(doc)
			var re *agentpmcli.RunError
			if err != nil || !errors.As(r.Err(), &re) || !errors.Is(r.Err(), agentpmcli.ErrRuntime) || re.Retryable() {
				t.Fatalf("%+v %v", r, err)
			}
			roundTripAs[agentpmcli.RunResult](nil)(t, doc)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var doc []byte
			if tc.file == "" {
				doc = frames[strings.TrimPrefix(tc.name, "seed ")]
				if doc == nil {
					t.Fatalf("no seed frame %s", tc.name)
				}
			} else {
				data, err := os.ReadFile(fixtureDir + tc.file)
				if err != nil {
					missingShared(t, err)
				}
				doc = data
				if tc.pick != nil {
					if doc, err = tc.pick(data); err != nil || doc == nil {
						t.Fatalf("%s: %v", tc.name, err)
					}
				}
			}
			tc.decode(t, jsontext.Value(doc))
		})
	}
}
