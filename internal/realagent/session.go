package realagent

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/bridgekit/bridgekit/gen/acp"
	"github.com/bridgekit/bridgekit/internal/recorder"
	"github.com/bridgekit/bridgekit/runtime/rpc"
)

// Session is a started agent connected to a Client, its traffic recorded.
// The client's own requests (initialize, authenticate, session/new,
// session/prompt) are sent as raw JSON and their results kept raw, so that
// a session runs whatever the generated types know.
type Session struct {
	Agent  *Agent
	Client *Client
	Conn   *rpc.Conn
	Rec    *recorder.Recorder
	// ID is the session id once New has run.
	ID string
}

// Connect starts a and connects c to it through a recorder.
func Connect(a *Agent, c *Client) (*Session, error) {
	stdin, stdout, err := a.Start()
	if err != nil {
		return nil, err
	}
	rec := recorder.New()
	s := &Session{Agent: a, Client: c, Rec: rec}
	in := rec.Writer(recorder.Send, stdin)
	out := rec.Reader(recorder.Recv, stdout)
	s.Conn = acp.NewConn(out, in, c.Handlers(nil), &rpc.Options{RequestTimeout: 60 * time.Second})
	go func() { <-s.Conn.Done(); stdout.Close() }()
	return s, nil
}

func (s *Session) call(ctx context.Context, method string, params any) (jsontext.Value, error) {
	var res jsontext.Value
	if err := s.Conn.Call(ctx, method, params, &res); err != nil {
		return nil, fmt.Errorf("%s: %s: %w", s.Agent.Spec.Name, method, err)
	}
	return res, nil
}

// Initialize sends initialize with the client's capabilities (files,
// terminals, and the gateway auth capability) and returns the result.
func (s *Session) Initialize(ctx context.Context) (jsontext.Value, error) {
	return s.call(ctx, acp.MethodInitialize, map[string]any{
		"protocolVersion": 1,
		"clientCapabilities": map[string]any{
			"fs":       map[string]any{"readTextFile": true, "writeTextFile": true},
			"terminal": true,
			"auth":     map[string]any{"_meta": map[string]any{"gateway": true}},
		},
		"clientInfo": map[string]any{"name": "bridgekit-realagent", "version": "0.0.0"},
	})
}

// Authenticate authenticates as the agent asks, given its initialize
// result: with the gateway method pointing at the model when it offers
// one, else with the spec's method when the agent lists it. It reports
// the method used, or "" when none was needed.
func (s *Session) Authenticate(ctx context.Context, init jsontext.Value) (string, error) {
	var res struct {
		AuthMethods []struct {
			ID string `json:"id"`
		} `json:"authMethods"`
	}
	if err := json.Unmarshal(init, &res, json.RejectUnknownMembers(false)); err != nil {
		return "", fmt.Errorf("initialize result: %w", err)
	}
	offered := map[string]bool{}
	for _, m := range res.AuthMethods {
		offered[m.ID] = true
	}
	switch {
	case offered["gateway"]:
		_, err := s.call(ctx, acp.MethodAuthenticate, map[string]any{"methodId": "gateway", "_meta": s.Agent.GatewayMeta()})
		return "gateway", err
	case s.Agent.Spec.AuthMethod != "" && offered[s.Agent.Spec.AuthMethod]:
		_, err := s.call(ctx, acp.MethodAuthenticate, map[string]any{"methodId": s.Agent.Spec.AuthMethod})
		return s.Agent.Spec.AuthMethod, err
	}
	return "", nil
}

// New opens a session in the workspace and returns its result.
func (s *Session) New(ctx context.Context) (jsontext.Value, error) {
	res, err := s.call(ctx, acp.MethodSessionNew, map[string]any{"cwd": s.Agent.Workspace, "mcpServers": []any{}})
	if err != nil {
		return nil, err
	}
	var r struct {
		SessionID string `json:"sessionId"`
	}
	if err := json.Unmarshal(res, &r, json.RejectUnknownMembers(false)); err != nil || r.SessionID == "" {
		return nil, fmt.Errorf("%s: session/new result without a sessionId: %.200s", s.Agent.Spec.Name, res)
	}
	s.ID = r.SessionID
	return res, nil
}

// SetMode sends session/set_mode.
func (s *Session) SetMode(ctx context.Context, mode string) error {
	_, err := s.call(ctx, acp.MethodSessionSetMode, map[string]any{"sessionId": s.ID, "modeId": mode})
	return err
}

// Prompt sends a text prompt and returns the result.
func (s *Session) Prompt(ctx context.Context, text string) (jsontext.Value, error) {
	return s.call(ctx, acp.MethodSessionPrompt, map[string]any{
		"sessionId": s.ID,
		"prompt":    []any{map[string]any{"type": "text", "text": text}},
	})
}

// Close ends the session: it closes the connection (the agent's stdin),
// stops the agent (grace for it to exit by itself), kills the client's
// terminals, and closes the agent (see Agent.Close, whose error it
// returns: processes left running are an error).
func (s *Session) Close(grace time.Duration) error {
	s.Conn.Close()
	_ = s.Agent.Stop(grace)
	s.Client.Close()
	return s.Agent.Close()
}

var _ io.Closer = (*rpc.Conn)(nil)
