package jsonrpc_test

import (
	"context"
	"fmt"
	"io"

	"github.com/bridgekit/bridgekit/runtime/jsonrpc"
	"github.com/bridgekit/bridgekit/runtime/rpc"
)

type AddParams struct {
	A, B int
}

// Two peers wired back to back: the host calls the runtime, which calls
// back into the host while handling the request.
func Example() {
	hostIn, runtimeOut := io.Pipe()
	runtimeIn, hostOut := io.Pipe()

	host := jsonrpc.NewConn(hostIn, hostOut, rpc.HandlerFunc(
		func(ctx context.Context, req *rpc.Request) (any, error) {
			if req.Method != "host/capabilities" {
				return nil, rpc.MethodNotFound(req.Method)
			}
			return []string{"fs"}, nil
		}), nil)
	defer host.Close()

	var runtime *rpc.Conn
	runtime = jsonrpc.NewConn(runtimeIn, runtimeOut, rpc.HandlerFunc(
		func(ctx context.Context, req *rpc.Request) (any, error) {
			if req.Method != "add" {
				return nil, rpc.MethodNotFound(req.Method)
			}
			var p AddParams
			if err := rpc.DecodeParams(req.Params, &p); err != nil {
				return nil, err
			}
			var caps []string
			if err := runtime.Call(ctx, "host/capabilities", nil, &caps); err != nil {
				return nil, err
			}
			fmt.Println("host capabilities:", caps)
			return p.A + p.B, nil
		}), nil)
	defer runtime.Close()

	ctx := context.Background()
	var sum int
	if err := host.Call(ctx, "add", AddParams{A: 2, B: 3}, &sum); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("sum:", sum)

	err := host.Call(ctx, "mul", nil, nil)
	fmt.Println(err)
	// Output:
	// host capabilities: [fs]
	// sum: 5
	// rpc error -32601: method not found: mul
}

// A request runs until the peer's cancel message for it arrives: ACP's
// session/cancel ends the running session/prompt of the same session.
func Example_cancel() {
	agentIn, clientOut := io.Pipe()
	clientIn, agentOut := io.Pipe()
	started := make(chan struct{})
	rules := &rpc.Options{Cancels: []rpc.CancelRule{
		{Method: "session/cancel", Target: "session/prompt", Key: "sessionId"},
	}}
	agent := jsonrpc.NewConn(agentIn, agentOut, rpc.HandlerFunc(
		func(ctx context.Context, req *rpc.Request) (any, error) {
			if req.Method != "session/prompt" {
				return nil, nil // session/cancel itself needs nothing more
			}
			close(started)
			<-ctx.Done() // a long turn, until cancelled
			return map[string]string{"stopReason": "cancelled"}, nil
		}), rules)
	defer agent.Close()
	client := jsonrpc.NewConn(clientIn, clientOut, nil, rules)
	defer client.Close()

	var result struct {
		StopReason string `json:"stopReason"`
	}
	done := make(chan error, 1)
	go func() {
		done <- client.Call(context.Background(), "session/prompt", map[string]string{"sessionId": "s1"}, &result)
	}()
	<-started
	client.Notify(context.Background(), "session/cancel", map[string]string{"sessionId": "s1"})
	fmt.Println(<-done, result.StopReason)
	// Output:
	// <nil> cancelled
}
