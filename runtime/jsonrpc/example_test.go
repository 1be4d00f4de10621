package jsonrpc_test

import (
	"context"
	"fmt"
	"io"

	"github.com/bridgekit/bridgekit/runtime/jsonrpc"
	"github.com/go-json-experiment/json"
)

type AddParams struct {
	A, B int
}

// Two peers wired back to back: the host calls the runtime, which calls
// back into the host while handling the request.
func Example() {
	hostIn, runtimeOut := io.Pipe()
	runtimeIn, hostOut := io.Pipe()

	host := jsonrpc.NewConn(hostIn, hostOut, jsonrpc.HandlerFunc(
		func(ctx context.Context, req *jsonrpc.Request) (any, error) {
			if req.Method != "host/capabilities" {
				return nil, jsonrpc.ErrMethodNotFound
			}
			return []string{"fs"}, nil
		}), nil)
	defer host.Close()

	var runtime *jsonrpc.Conn
	runtime = jsonrpc.NewConn(runtimeIn, runtimeOut, jsonrpc.HandlerFunc(
		func(ctx context.Context, req *jsonrpc.Request) (any, error) {
			if req.Method != "add" {
				return nil, jsonrpc.ErrMethodNotFound
			}
			var p AddParams
			if err := json.Unmarshal(req.Params, &p); err != nil {
				return nil, jsonrpc.NewError(jsonrpc.CodeInvalidParams, err.Error(), nil)
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
	// jsonrpc error -32601: method not found
}
