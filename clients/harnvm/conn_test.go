package harnvm_test

import (
	"context"
	"errors"
	"io"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"go.uber.org/goleak"

	"github.com/bridgekit/bridgekit/clients/harnvm"
	"github.com/bridgekit/bridgekit/gen/acp"
	"github.com/bridgekit/bridgekit/gen/harn"
	"github.com/bridgekit/bridgekit/internal/proctest"
	"github.com/bridgekit/bridgekit/runtime/rpc"
	"github.com/bridgekit/bridgekit/runtime/wire/wiretest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, proctest.IgnoreSpawner()) }

func ptr[T any](v T) *T { return &v }

// connect serves host (both catalogues) on one end of a pipe pair and
// returns a Client, serving vm, on the other.
func connect(t *testing.T, host rpc.Handler, vm rpc.Handler) (*harnvm.Client, *rpc.Conn) {
	t.Helper()
	hostIn, vmOut := io.Pipe()
	vmIn, hostOut := io.Pipe()
	hostConn := harn.NewBridgeConn(hostIn, hostOut, host, nil)
	c := harnvm.New(vmIn, vmOut, vm, nil)
	t.Cleanup(func() {
		c.Close()
		hostConn.Close()
		vmOut.Close()
		hostOut.Close()
	})
	return c, hostConn
}

// The Client reads the non-canonical answers a real host may give, over a
// real connection that also carries ACP both ways.
func TestClientOverOneConnection(t *testing.T) {
	var mu sync.Mutex
	var updates []acp.SessionNotification
	bridge := &harn.HostHandlers{
		HostToolsList: func(context.Context, *harn.NoArgs) (*harn.HostToolsListResult, error) {
			// {result: {tools}}, with a compatibility name.
			return &harn.HostToolsListResult{Object: &harn.HostToolsListResultObject{ToolsListEnvelope: &harn.ToolsListEnvelope{
				Result: harn.ToolsList{Tools: []harn.HostTool{{Name: "Read", ShortDescription: ptr("Read a file"), InputSchema: jsontext.Value(`{"type":"object"}`)}}},
			}}}, nil
		},
		SkillsList: func(context.Context, *harn.NoArgs) (*harn.SkillsListResult, error) {
			return &harn.SkillsListResult{Object: &harn.SkillsList{Skills: []harn.SkillManifestRef{{ID: ptr("deploy"), Name: ptr("deploy")}}}}, nil
		},
		SkillsFetch: func(_ context.Context, p *harn.SkillsFetchParams) (*harn.Skill, error) {
			if p.ID != "deploy" {
				return nil, rpc.NewError(rpc.CodeInvalidParams, "no skill", nil)
			}
			// The manifest flattened to the top level.
			return &harn.Skill{Name: ptr("deploy"), Body: ptr("# Deploy"), AllowedTools: []string{"bash"}, Paths: []string{"infra/**"}}, nil
		},
		BuiltinCall: func(_ context.Context, p *harn.BuiltinCallParams) (jsontext.Value, error) {
			if p.Name != "echo" {
				return nil, rpc.NewError(harnvm.CodeToolRejected, "tool "+p.Name+" is not allowed", nil)
			}
			if len(p.Args) != 1 {
				return nil, rpc.NewError(rpc.CodeInvalidParams, "one argument", nil)
			}
			return p.Args[0], nil
		},
		// skill/match answered raw: a nameless entry, an unknown name and
		// a default score, which the typed result could not carry.
		Fallback: rpc.HandlerFunc(func(_ context.Context, req *rpc.Request) (any, error) {
			if req.Method == harn.MethodSkillMatch {
				return jsontext.Value(`{"skills":[{"score":9},{"name":"nope","score":3},{"name":"ship","reason":"by path"},{"name":"review","score":0.25}]}`), nil
			}
			return nil, rpc.MethodNotFound(req.Method)
		}),
	}
	client := &acp.ClientHandlers{SessionUpdate: func(_ context.Context, n *acp.SessionNotification) error {
		mu.Lock()
		defer mu.Unlock()
		updates = append(updates, *n)
		return nil
	}}
	skillsUpdated := make(chan struct{}, 1)
	vmBridge := &harn.VMHandlers{SkillsUpdate: func(context.Context, *harn.NoArgs) error {
		skillsUpdated <- struct{}{}
		return nil
	}}
	agent := &acp.AgentHandlers{Initialize: func(_ context.Context, p *acp.InitializeRequest) (*acp.InitializeResponse, error) {
		return &acp.InitializeResponse{ProtocolVersion: p.ProtocolVersion}, nil
	}}
	c, hostConn := connect(t, harn.HostHandler(bridge, client), harn.VMHandler(vmBridge, agent))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	tools, err := c.ListTools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out, _ := json.Marshal(tools)
	if !wiretest.EqualJSON(t, out, []byte(`[{"name":"Read","description":"Read a file","schema":{"type":"object"},"deprecated":false}]`)) {
		t.Errorf("tools %s", out)
	}
	skills, err := c.ListSkills(ctx)
	if err != nil || len(skills) != 1 || *skills[0].ID != "deploy" {
		t.Fatalf("skills %+v %v", skills, err)
	}
	skill, err := c.FetchSkill(ctx, "deploy")
	if err != nil {
		t.Fatal(err)
	}
	out, _ = json.Marshal(skill)
	if !wiretest.EqualJSON(t, out, []byte(`{"name":"deploy","body":"# Deploy","manifest":{"allowed_tools":["bash"],"paths":["infra/**"]}}`)) {
		t.Errorf("skill %s", out)
	}
	if _, err := c.FetchSkill(ctx, "missing"); !errors.Is(err, rpc.ErrInvalidParams) {
		t.Errorf("missing skill: %v", err)
	}
	matches, err := c.MatchSkills(ctx, &harn.SkillMatchParams{Strategy: "host", Prompt: "ship it",
		Candidates: []harn.SkillCandidate{{Name: "ship", Paths: []string{}}, {Name: "review", Paths: []string{}}}})
	if err != nil {
		t.Fatal(err)
	}
	out, _ = json.Marshal(matches)
	if !wiretest.EqualJSON(t, out, []byte(`[{"name":"ship","score":1,"reason":"by path"},{"name":"review","score":0.25,"reason":"host match"}]`)) {
		t.Errorf("matches %s", out)
	}

	res, err := c.InvokeTool(ctx, "echo", jsontext.Value(`{"text":"hi"}`))
	if err != nil || string(res) != `{"text":"hi"}` {
		t.Fatalf("echo: %s %v", res, err)
	}
	if res, err := c.InvokeTool(ctx, "echo", nil); err != nil || string(res) != `{}` {
		t.Fatalf("echo without args: %s %v", res, err)
	}
	if _, err := c.InvokeTool(ctx, "rm", nil); !errors.Is(err, harnvm.ErrToolRejected) {
		t.Fatalf("rejected tool: %v", err)
	}

	// ACP on the same connection, both ways.
	if err := c.ACP.SessionUpdate(ctx, &acp.SessionNotification{SessionID: "s", Update: acp.SessionUpdate{
		AgentMessageChunk: &acp.ContentChunk{Content: acp.ContentBlock{Text: &acp.TextContent{Text: "hello"}}}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ListSkills(ctx); err != nil { // a round trip: the notification before it was handled
		t.Fatal(err)
	}
	mu.Lock()
	if len(updates) != 1 || updates[0].Update.AgentMessageChunk == nil {
		t.Errorf("updates %+v", updates)
	}
	mu.Unlock()
	init, err := acp.NewAgentPeer(hostConn).Initialize(ctx, &acp.InitializeRequest{ProtocolVersion: 1})
	if err != nil || init.ProtocolVersion != 1 {
		t.Fatalf("initialize from the host: %+v %v", init, err)
	}
	if err := harn.NewVMPeer(hostConn).SkillsUpdate(ctx, &harn.NoArgs{}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-skillsUpdated:
	case <-ctx.Done():
		t.Fatal("skills/update not delivered")
	}
}

// A host that answers with a frame of empty objects cannot make the
// client decode them into Go values (each a hundred times its two
// bytes): the reply is refused whole, the call fails with
// rpc.ErrTooManyObjects, and little memory is taken.
func TestAnswerOfManyObjectsIsRefused(t *testing.T) {
	huge := jsontext.Value(`{"tools":[` + strings.Repeat("{},", 500_000) + `{}]}`)
	host := rpc.HandlerFunc(func(_ context.Context, req *rpc.Request) (any, error) {
		if req.Method == harn.MethodHostToolsList {
			return huge, nil
		}
		return nil, rpc.MethodNotFound(req.Method)
	})
	c, _ := connect(t, host, nil)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := c.ListTools(ctx); !errors.Is(err, rpc.ErrTooManyObjects) {
		t.Fatalf("ListTools = %v, want rpc.ErrTooManyObjects", err)
	}
	runtime.ReadMemStats(&after)
	if got := after.TotalAlloc - before.TotalAlloc; got > 64<<20 {
		t.Errorf("the refused answer cost %d bytes of allocation", got)
	}
}
