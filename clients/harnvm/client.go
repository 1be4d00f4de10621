// Package harnvm is the VM side of Harn's stdio bridge: a typed client with
// which a Harn runtime (or a tool or test standing in for one) calls its host.
//
// The Client embeds the generated harn.HostPeer, so every host method and
// every host/call operation is a typed method:
//
//	c, _ := harnvm.Start(ctx, exec.Command("my-host"), nil)
//	defer c.Close()
//	shells, err := c.ProcessListShells(ctx, nil, nil)
//
// The connection is the whole stream between a runtime and its host
// (harn.NewBridgeConn): the bridge and ACP, with both protocols' cancel
// rules, so Client.ACP calls the host's ACP client methods
// (session/update, session/request_permission, fs/*, terminal/*) on it, and
// the handler given to New serves what the host sends (typically
// harn.VMHandler(&bridge, &agent)).
//
// Where Harn reads a host's answer more tolerantly than its canonical
// shape, so does this package: ListTools, ListSkills, FetchSkill and
// MatchSkills accept every shape Harn accepts and normalise it as Harn does
// (ReadTools, ReadSkills, ReadSkill, ReadSkillMatches), Supports reads every
// host/capabilities form, and InvokeTool tells a rejected tool
// (ErrToolRejected) from a failed one.
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
	"time"

	"github.com/bridgekit/bridgekit/gen/acp"
	"github.com/bridgekit/bridgekit/gen/harn"
	"github.com/bridgekit/bridgekit/internal/child"
	"github.com/bridgekit/bridgekit/runtime/redact"
	"github.com/bridgekit/bridgekit/runtime/rpc"
	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Client calls a host over one connection.
type Client struct {
	*harn.HostPeer
	// ACP calls the host's ACP client methods on the same connection.
	ACP  *acp.ClientPeer
	conn *rpc.Conn

	// A started host process.
	cmd     *exec.Cmd
	exited  chan struct{} // closed once Wait has returned
	waitErr error         // Wait's error, set before exited is closed
	unwatch func() bool   // stops the watch on Start's context
	grace   time.Duration
}

// StopGrace is how long Close waits for a started host to exit after its
// input ends, and then after SIGTERM, before it kills it.
const StopGrace = 5 * time.Second

var stopGrace = StopGrace // shortened by tests

// New speaks the stream between a runtime and its host over r (from the
// host) and w (to the host): the bridge and ACP, with both protocols' cancel
// rules and preempted methods (harn.NewBridgeConn). h serves what the host
// sends the VM, typically harn.VMHandler(&bridge, &agent) (bridge
// notifications such as skills/update, ACP's initialize, session/prompt,
// ...); nil ignores notifications and answers requests with
// rpc.ErrMethodNotFound.
func New(r io.Reader, w io.Writer, h rpc.Handler, opts *rpc.Options) *Client {
	conn := harn.NewBridgeConn(r, w, h, opts)
	return &Client{HostPeer: harn.NewHostPeer(conn), ACP: acp.NewClientPeer(conn), conn: conn}
}

// Start runs cmd as the host process and speaks the bridge over its stdin
// and stdout; cmd.Stdin and cmd.Stdout must be unset. The host runs in a
// process group of its own (on Linux it dies with this process), and
// stopping it ends the whole group. The child's stderr
// goes to cmd.Stderr, or this process's stderr. ctx bounds the host's life,
// as with exec.CommandContext: when it ends the connection is closed (calls
// in flight fail with rpc.ErrClosed) and the host is stopped as Close stops
// it.
func Start(ctx context.Context, cmd *exec.Cmd, opts *rpc.Options) (*Client, error) {
	if cmd.Stdin != nil || cmd.Stdout != nil {
		return nil, errors.New("harnvm: Start needs cmd.Stdin and cmd.Stdout unset")
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if cmd.Stderr == nil {
		cmd.Stderr = os.Stderr
	}
	if cmd.WaitDelay == 0 {
		cmd.WaitDelay = stopGrace // a grandchild holding stderr must not hold Wait
	}
	stdin, stdout, err := child.Start(cmd)
	if err != nil {
		return nil, fmt.Errorf("harnvm: start %s: %w", cmd.Path, err)
	}
	// The connection's diagnostics quote the host's frames: mask the
	// secrets of its environment and token shapes in them.
	var o rpc.Options
	if opts != nil {
		o = *opts
	}
	env := cmd.Env
	if env == nil {
		env = os.Environ()
	}
	o.Logger = child.Logger(o.Logger, redact.FromEnv(env))
	c := New(stdout, stdin, nil, &o)
	c.cmd, c.exited, c.grace = cmd, make(chan struct{}), stopGrace
	go func() {
		c.waitErr = cmd.Wait()
		child.Reap(cmd.Process) // nothing it started outlives it
		close(c.exited)
	}()
	c.unwatch = context.AfterFunc(ctx, func() { c.stop() })
	return c, nil
}

// Conn is the underlying connection.
func (c *Client) Conn() *rpc.Conn { return c.conn }

// Close closes the connection; for a started host it then waits for the
// process to exit (closing its stdin is the signal to stop): after
// StopGrace it sends SIGTERM, and after another StopGrace it kills it. It
// returns the host's exit error, if any.
func (c *Client) Close() error {
	if c.unwatch != nil {
		c.unwatch()
	}
	err := c.conn.Close()
	if c.cmd != nil {
		c.stop()
		if c.waitErr != nil {
			return c.waitErr
		}
	}
	if errors.Is(err, rpc.ErrClosed) {
		return nil
	}
	return err
}

// stop closes the connection and waits for the started host to exit,
// asking its process group to stop (SIGTERM) after StopGrace, then killing
// the group after StopGrace again; whatever it started is killed once it
// has exited.
func (c *Client) stop() {
	_ = c.conn.Close()
	child.Stop(c.cmd.Process, c.exited, c.grace, c.grace)
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

// call sends a bridge request and returns its raw result.
func (c *Client) call(ctx context.Context, method string, params any) (jsontext.Value, error) {
	var res jsontext.Value
	if err := c.conn.Send(ctx, rpc.Outbound{Method: method, Params: params}, &res); err != nil {
		return nil, err
	}
	return res, nil
}

// ListTools asks host/tools/list and reads the answer as Harn does
// (ReadTools): every tool normalised to name, description, schema and
// deprecated.
func (c *Client) ListTools(ctx context.Context) ([]harn.HostTool, error) {
	res, err := c.call(ctx, harn.MethodHostToolsList, &harn.NoArgs{})
	if err != nil {
		return nil, err
	}
	return ReadTools(res)
}

// ListSkills asks skills/list and reads the answer as Harn does
// (ReadSkills).
func (c *Client) ListSkills(ctx context.Context) ([]harn.SkillManifestRef, error) {
	res, err := c.call(ctx, harn.MethodSkillsList, &harn.NoArgs{})
	if err != nil {
		return nil, err
	}
	return ReadSkills(res)
}

// FetchSkill asks skills/fetch for the skill id and reads the answer as
// Harn does (ReadSkill): the manifest nested or flattened.
func (c *Client) FetchSkill(ctx context.Context, id string) (*harn.Skill, error) {
	res, err := c.call(ctx, harn.MethodSkillsFetch, &harn.SkillsFetchParams{ID: id})
	if err != nil {
		return nil, err
	}
	return ReadSkill(res)
}

// MatchSkills asks skill/match to rank p.Candidates and reads the answer as
// Harn does (ReadSkillMatches): every shape Harn accepts, names not among
// the candidates and nameless entries dropped, the default score and
// reason filled in, best first. Nil working files and candidates are sent
// as empty arrays, as Harn always sends them. On an error Harn falls back
// to its own ranker; so should the caller.
func (c *Client) MatchSkills(ctx context.Context, p *harn.SkillMatchParams) ([]harn.SkillMatch, error) {
	q := *p
	if q.WorkingFiles == nil {
		q.WorkingFiles = []string{}
	}
	if q.Candidates == nil {
		q.Candidates = []harn.SkillCandidate{}
	}
	res, err := c.call(ctx, harn.MethodSkillMatch, &q)
	if err != nil {
		return nil, err
	}
	return ReadSkillMatches(res, q.Candidates)
}

// CodeToolRejected is the bridge's "rejected" code: a builtin_call answered
// with it is a tool the host does not permit, which Harn turns into a
// denied tool result for the model rather than an error of the run.
const CodeToolRejected = -32001

// ErrToolRejected matches, with errors.Is, a builtin_call answered with
// CodeToolRejected.
var ErrToolRejected = &rpc.Error{Code: CodeToolRejected}

// InvokeTool invokes the host tool name (one listed by host/tools/list)
// through builtin_call, as Harn does: args, the arguments object, is the
// one positional argument (nil sends {}). A rejected tool is an error
// matching ErrToolRejected; any other error answer is returned as the
// *rpc.Error it is.
func (c *Client) InvokeTool(ctx context.Context, name string, args jsontext.Value) (jsontext.Value, error) {
	if len(args) == 0 {
		args = jsontext.Value("{}")
	}
	return c.BuiltinCall(ctx, &harn.BuiltinCallParams{Name: name, Args: []jsontext.Value{args}})
}
