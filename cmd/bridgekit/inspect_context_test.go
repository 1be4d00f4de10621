package main

import (
	"context"
	"strings"
	"testing"

	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/inspect"
	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/tracelog"
	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/traffic"
)

func readRecording(t *testing.T, path string) []*tracelog.Record {
	t.Helper()
	format, err := traffic.Sniff(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []*tracelog.Record
	if err := traffic.Read(context.Background(), path, format, "", func(_ int, r *tracelog.Record) error { out = append(out, r); return nil }); err != nil {
		t.Fatal(err)
	}
	return out
}

// The inspector's Context view summarizes initialize with probe's own
// code, over real agents' recorded turns.
func TestInspectorSummarizesInitialize(t *testing.T) {
	for _, tc := range []struct {
		agent string
		want  []string
	}{
		{"qwen-0.24.4", []string{"client               bridgekit-host (devel)\n", "protocol asked       1\n", "client capabilities  fs.readTextFile: yes\n",
			"agent                qwen-code 0.24.4 (Qwen Code)\n", "protocol version     1\n", "auth methods         openai", "session              session/new answered (#"}},
		{"codex-acp-2.6.0", []string{"agent                @agentclientprotocol/codex-acp 2.6.0 (Codex)\n", "sessionCapabilities.fork: yes\n",
			"auth methods         api-key  \"API Key\" [agent]", "session              session/new answered (#8)\n", "modes                read-only*  Read-only", "gpt-5.5[medium]*  5.5 (medium)",
			"config options       mode (mode, select): read-only*"}},
		{"claude-agent-acp-0.101.0", []string{"auth methods         none\n", "modes                default*  Manual: Always ask before making changes\n", "models               none\n"}},
	} {
		c := inspect.SessionContext(readRecording(t, "../../testdata/acp/traffic/"+tc.agent+"/turn.jsonl"), summarizeInitialize)
		for _, w := range tc.want {
			if !strings.Contains(c.Initialize, w) {
				t.Errorf("%s: the summary lacks %q:\n%s", tc.agent, w, c.Initialize)
			}
		}
	}
}

// A session without initialize, or whose initialize was never answered
// or failed, says so; other protocols' sessions have no summary.
func TestInspectorSummaryOfAnUnansweredInitialize(t *testing.T) {
	recs := readRecording(t, "../../testdata/acp/traffic/qwen-0.24.4/turn.jsonl")
	var cut []*tracelog.Record
	for _, r := range recs {
		if r.Type == tracelog.TypeFrame && r.Method == "initialize" && r.ReplyTo != 0 {
			continue
		}
		cut = append(cut, r)
	}
	c := inspect.SessionContext(cut, summarizeInitialize)
	if !strings.Contains(c.Initialize, "error                initialize (#1) was never answered") || c.InitializeSeq != 0 {
		t.Errorf("unanswered: %q", c.Initialize)
	}
	if c := inspect.SessionContext(recs[len(recs)-3:], summarizeInitialize); c.Initialize != "" {
		t.Errorf("no initialize: %q", c.Initialize)
	}
}
