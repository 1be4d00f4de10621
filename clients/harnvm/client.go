// Package harnvm is the VM side of Harn's stdio bridge: a typed client with
// which a Harn runtime (or a tool or test standing in for one) calls its host.
//
// The Client embeds the generated harn.HostPeer, so every host method and
// every host/call operation is a typed method:
//
//	c, _ := harnvm.Start(ctx, exec.Command("my-host"), nil)
//	defer c.Close()
//	shells, err := c.ProcessListShells(ctx, nil, nil)
package harnvm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"slices"

	"github.com/bridgekit/bridgekit/gen/harn"
	"github.com/bridgekit/bridgekit/runtime/rpc"
	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Client calls a host over one connection.
type Client struct {
	*harn.HostPeer
	conn *rpc.Conn
	cmd  *exec.Cmd
}

// New speaks the bridge over r (from the host) and w (to the host). h serves
// what the host sends the VM (notifications such as skills/update), for
// example a *harn.VMHandlers; nil ignores notifications and answers requests
// with rpc.ErrMethodNotFound.
func New(r io.Reader, w io.Writer, h rpc.Handler, opts *rpc.Options) *Client {
	conn := harn.NewConn(r, w, h, opts)
	return &Client{HostPeer: harn.NewHostPeer(conn), conn: conn}
}

// Start runs cmd as the host process and speaks the bridge over its stdin and
// stdout. The child's stderr goes to cmd.Stderr, or this process's stderr.
func Start(ctx context.Context, cmd *exec.Cmd, opts *rpc.Options) (*Client, error) {
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if cmd.Stderr == nil {
		cmd.Stderr = os.Stderr
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", cmd.Path, err)
	}
	c := New(stdout, stdin, nil, opts)
	c.cmd = cmd
	return c, nil
}

// Conn is the underlying connection.
func (c *Client) Conn() *rpc.Conn { return c.conn }

// Close closes the connection; for a started host it then waits for the
// process to exit (closing its stdin is the signal to stop) and returns its
// exit error, if any.
func (c *Client) Close() error {
	err := c.conn.Close()
	if c.cmd != nil {
		if werr := c.cmd.Wait(); werr != nil {
			return werr
		}
	}
	if errors.Is(err, rpc.ErrClosed) {
		return nil
	}
	return err
}

// Supports asks host/capabilities whether the host serves capability.op,
// reading every shape Harn accepts: a list of names, {ops: [...]}, or
// {operations: [...] | {name: ...}}. Like Harn, it treats an error answer
// from the host as an empty manifest; transport errors are returned.
func (c *Client) Supports(ctx context.Context, capability, op string) (bool, error) {
	caps, err := c.HostCapabilities(ctx, nil)
	if err != nil {
		var rpcErr *rpc.Error
		if errors.As(err, &rpcErr) {
			return false, nil
		}
		return false, err
	}
	return slices.Contains(Operations(caps[capability]), op), nil
}

// Operations returns the operation names one host/capabilities entry lists,
// normalised as Harn does: ops and operations (a list, or an object keyed by
// operation name) are merged, duplicates removed, order kept.
func Operations(entry harn.CapabilityOps) []string {
	var out []string
	add := func(names ...string) {
		for _, n := range names {
			if !slices.Contains(out, n) {
				out = append(out, n)
			}
		}
	}
	switch {
	case entry.List != nil:
		add(entry.List...)
	case entry.Object != nil:
		add(entry.Object.Ops...)
		if ops := entry.Object.Operations; ops != nil {
			add(ops.List...)
			if ops.Object != nil {
				var byName map[string]jsontext.Value
				if json.Unmarshal(ops.Object, &byName) == nil {
					names := slices.Sorted(maps.Keys(byName))
					add(names...)
				}
			}
		}
	}
	return out
}
