package harn_test

import (
	"context"
	"fmt"
	"io"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/bridgekit/bridgekit/gen/acp"
	"github.com/bridgekit/bridgekit/gen/harn"
)

// A host and a Harn runtime on one stream: the host serves a bridge method
// (skills/list) and an ACP client method (session/update, whose Harn
// variants harn.UpdateOf types), and calls the runtime's ACP and bridge
// methods back.
func Example() {
	ctx := context.Background()
	done := make(chan struct{})
	host := harn.HostHandler(&harn.HostHandlers{
		SkillsList: func(context.Context, *harn.NoArgs) (*harn.SkillsListResult, error) {
			return &harn.SkillsListResult{List: []harn.SkillManifestRef{{ID: new("deploy"), Name: new("deploy")}}}, nil
		},
	}, &acp.ClientHandlers{
		SessionUpdate: func(_ context.Context, n *acp.SessionNotification) error {
			if u, err := harn.UpdateOf(n.Update); err == nil && u.WorkerUpdate != nil {
				w := u.WorkerUpdate.Meta.Harn
				fmt.Println("worker", *w.WorkerID, *w.Status)
			}
			close(done)
			return nil
		},
	})
	vm := harn.VMHandler(&harn.VMHandlers{
		SessionInject: func(_ context.Context, p *harn.SessionInjectParams) (*harn.SessionInjectResult, error) {
			return &harn.SessionInjectResult{MessageID: "msg_inj_1"}, nil
		},
	}, nil)

	toHostR, toHostW := io.Pipe()
	toVMR, toVMW := io.Pipe()
	hostConn := harn.NewBridgeConn(toHostR, toVMW, host, nil)
	vmConn := harn.NewBridgeConn(toVMR, toHostW, vm, nil)
	defer hostConn.Close()
	defer vmConn.Close()

	// The runtime asks its host for skills and reports a worker.
	skills, _ := harn.NewHostPeer(vmConn).SkillsList(ctx, &harn.NoArgs{})
	fmt.Println("skill", *skills.List[0].ID)
	_ = vmConn.Notify(ctx, acp.MethodSessionUpdate, jsontext.Value(`{"sessionId":"s","update":{"sessionUpdate":"worker_update","_meta":{"harn":{"workerId":"review","status":"completed"}}}}`))
	<-done

	// The host queues a user message; ACP methods the runtime does not serve
	// are answered -32601.
	res, _ := harn.NewVMPeer(hostConn).SessionInject(ctx, &harn.SessionInjectParams{
		SessionID: "s", Mode: harn.InjectModeSteer, Content: harn.InjectContent{String: new("run the tests too")},
	})
	fmt.Println("injected", res.MessageID)
	_, err := acp.NewAgentPeer(hostConn).SessionNew(ctx, &acp.NewSessionRequest{Cwd: "/", MCPServers: []acp.MCPServer{}})
	fmt.Println(err)
	// Output:
	// skill deploy
	// worker review completed
	// injected msg_inj_1
	// rpc error -32601: method not found: session/new
}

// The legacy reader accepts a Harn update from before #905, whose vendor
// fields sat at the update's root, and returns it in the current shape.
func ExampleReadLegacySessionUpdate() {
	n, err := harn.ReadLegacySessionUpdate([]byte(`{"sessionId":"s","update":{"sessionUpdate":"skill_activated","skillName":"rust","iteration":2}}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	u, err := harn.UpdateOf(n.Update)
	if err != nil {
		fmt.Println(err)
		return
	}
	h := u.SkillActivated.Meta.Harn
	fmt.Println(h.SkillName, *h.Iteration)
	// Output: rust 2
}
