package main

import (
	"bytes"
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/bridgekit/bridgekit/gen/acp"
	"github.com/bridgekit/bridgekit/runtime/remote"
	"github.com/bridgekit/bridgekit/servers/acpremote"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The client against an in-process agent over both transports: the answer printed, a permission
// request granted or refused as -allow says.
func TestRemoteClient(t *testing.T) {
	srv := acpremote.NewServer(func(remote.ConnInfo) *acp.AgentHandlers {
		return &acp.AgentHandlers{
			Initialize: func(context.Context, *acp.InitializeRequest) (*acp.InitializeResponse, error) {
				return &acp.InitializeResponse{ProtocolVersion: 1}, nil
			},
			SessionNew: func(context.Context, *acp.NewSessionRequest) (*acp.NewSessionResponse, error) {
				return &acp.NewSessionResponse{SessionID: "s"}, nil
			},
			SessionPrompt: func(ctx context.Context, p *acp.PromptRequest) (*acp.PromptResponse, error) {
				res, err := acp.ClientPeerFrom(ctx).SessionRequestPermission(ctx, &acp.RequestPermissionRequest{SessionID: p.SessionID,
					Options: []acp.PermissionOption{{OptionID: "y", Kind: acp.PermissionOptionKindAllowOnce}, {OptionID: "n", Kind: acp.PermissionOptionKindRejectOnce}}})
				if err != nil {
					return nil, err
				}
				if res.Outcome.Selected.OptionID != "y" {
					return &acp.PromptResponse{StopReason: acp.StopReasonRefusal}, nil
				}
				acp.ClientPeerFrom(ctx).SessionUpdate(ctx, acp.AgentText(p.SessionID, "echo: "+acp.PromptText(p.Prompt)))
				return &acp.PromptResponse{StopReason: acp.StopReasonEndTurn}, nil
			},
		}
	}, nil)
	hs := httptest.NewServer(srv)
	defer func() { hs.CloseClientConnections(); srv.Close(); hs.Close() }()
	for _, url := range []string{"ws" + strings.TrimPrefix(hs.URL, "http"), hs.URL} {
		var out, errs bytes.Buffer
		if code := run(context.Background(), []string{"-url", url, "-prompt", "hi there", "-allow"}, &out, &errs); code != 0 || !strings.Contains(out.String(), "echo: hi there") {
			t.Fatalf("%s: exit %d, out %q, err %q", url, code, out.String(), errs.String())
		}
		out.Reset()
		if code := run(context.Background(), []string{"-url", url, "-prompt", "hi"}, &out, &errs); code != 3 || !strings.Contains(errs.String(), "refusal") {
			t.Fatalf("%s refused: exit %d, err %q", url, code, errs.String())
		}
	}
}
