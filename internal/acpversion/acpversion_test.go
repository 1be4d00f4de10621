package acpversion

import (
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/bridgekit/bridgekit/gen/acp"
	"github.com/bridgekit/bridgekit/gen/acpv2"
)

var (
	v1Only = Config{V1: true}
	v2Only = Config{V2: true}
	both   = Config{V1: true, V2: true}
)

func TestSelect(t *testing.T) {
	for _, c := range []struct {
		cfg             Config
		requested, want int
	}{
		{v1Only, 0, V1}, {v1Only, 1, V1}, {v1Only, 2, V1}, {v1Only, 65535, V1},
		{v2Only, 0, 0}, {v2Only, 1, 0}, {v2Only, 2, V2}, {v2Only, 9, V2},
		{both, 0, 0}, {both, 1, V1}, {both, 2, V2}, {both, 3, V2},
		{Config{}, 2, 0},
	} {
		if got := c.cfg.Select(c.requested); got != c.want {
			t.Errorf("%+v.Select(%d) = %d, want %d", c.cfg, c.requested, got, c.want)
		}
	}
}

const v2Init = `"params":{"protocolVersion":2,"info":{"name":"c","version":"1"}}`

// TestDecide is the router's table: each message before initialize, and the reply the TypeScript SDK
// 2.4.0's router (or its NDJSON stream, for a line that is not JSON) writes for it.
func TestDecide(t *testing.T) {
	for _, c := range []struct {
		cfg     Config
		msg     string
		version int
		reply   string // the whole reply, or "" for none
	}{
		{both, `not json`, 0, `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`},
		{both, `{"a":1,"a":2}`, 0, `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`},
		{both, `[{"jsonrpc":"2.0","id":1,"method":"initialize"}]`, 0, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid request: JSON-RPC batches are not supported"}}`},
		{both, `7`, 0, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid request","data":7}}`},
		{both, `{"jsonrpc":"2.0","method":"session/cancel","params":{}}`, 0, ""},
		{both, `{"jsonrpc":"2.0","id":4,"result":{}}`, 0, ""},
		{both, `{"id":4}`, 0, ""}, // response-shaped, even without jsonrpc
		{both, `{"error":{}}`, 0, ""},
		{both, `{"jsonrpc":"2.0"}`, 0, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid request","data":"first ACP message must be an initialize request"}}`},
		{both, `{"jsonrpc":"1.0","id":1,"method":"initialize",` + v2Init + `}`, 0, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid request","data":"first ACP message must be an initialize request"}}`},
		{both, `{"jsonrpc":"2.0","id":{"a":1},"method":"initialize",` + v2Init + `}`, 0, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid request","data":"first ACP message must be an initialize request"}}`},
		{both, `{"jsonrpc":"2.0","id":1e999,"method":"initialize",` + v2Init + `}`, 0, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid request","data":"first ACP message must be an initialize request"}}`},
		{both, `{"jsonrpc":"2.0","id":"a","method":"session/new","params":{}}`, 0, `{"jsonrpc":"2.0","id":"a","error":{"code":-32600,"message":"Invalid request","data":"first ACP request must be initialize"}}`},
		{both, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":[]}`, 0, `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"Invalid params","data":"initialize.protocolVersion must be a valid ACP protocol version"}}`},
		{both, `{"jsonrpc":"2.0","id":1,"method":"initialize"}`, 0, `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"Invalid params","data":"initialize.protocolVersion must be a valid ACP protocol version"}}`},
		{both, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2"}}`, 0, `"code":-32602`},
		{both, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":65536}}`, 0, `"code":-32602`},
		{both, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":-1}}`, 0, `"code":-32602`},
		{both, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1.5}}`, 0, `"code":-32602`},
		{both, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":0}}`, 0, `{"jsonrpc":"2.0","id":1,"error":{"code":-32022,"message":"Unsupported protocol version","data":{"requested":0,"supported":[1,2]}}}`},
		{v2Only, `{"jsonrpc":"2.0","id":"x","method":"initialize","params":{"protocolVersion":1}}`, 0, `{"jsonrpc":"2.0","id":"x","error":{"code":-32022,"message":"Unsupported protocol version","data":{"requested":1,"supported":[2]}}}`},
		{both, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`, V1, ""},
		{both, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1.0}}`, V1, ""},
		{both, `{"jsonrpc":"2.0","id":null,"method":"initialize","params":{"protocolVersion":1}}`, V1, ""},
		{both, `{"jsonrpc":"2.0","id":1,"method":"initialize",` + v2Init + `}`, V2, ""},
		{both, `{"jsonrpc":"2.0","id":1.0,"method":"initialize",` + v2Init + `}`, V2, ""},
		{both, `{"jsonrpc":"2.0","id":1.5,"method":"initialize",` + v2Init + `}`, 0, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid request: ACP v2 request IDs must be strings or integers"}}`},
		{both, `{"jsonrpc":"2.0","id":null,"method":"initialize",` + v2Init + `}`, 0, `"message":"Invalid request: ACP v2 request IDs must be strings or integers"`},
		{both, `{"jsonrpc":"2.0","id":3,"method":"initialize","params":{"protocolVersion":2}}`, 0, `{"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"Invalid params","data":"invalid initialize params: missing required member \"info\""}}`},
		{both, `{"jsonrpc":"2.0","id":3,"method":"initialize","params":{"protocolVersion":3}}`, V2, ""},
		{v1Only, `{"jsonrpc":"2.0","id":1,"method":"initialize",` + v2Init + `}`, V1, ""},
		{v1Only, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":0}}`, V1, ""},
	} {
		d := c.cfg.Decide([]byte(c.msg))
		if d.Version != c.version {
			t.Errorf("%+v %s: version %d, want %d (reply %s)", c.cfg, c.msg, d.Version, c.version, d.Reply)
		}
		switch {
		case c.reply == "" && d.Reply != nil:
			t.Errorf("%s: replied %s, want nothing", c.msg, d.Reply)
		case strings.HasPrefix(c.reply, "{") && string(d.Reply) != c.reply:
			t.Errorf("%s: replied\n%s, want\n%s", c.msg, d.Reply, c.reply)
		case !strings.Contains(string(d.Reply), c.reply):
			t.Errorf("%s: replied %s, want one with %s", c.msg, d.Reply, c.reply)
		}
		if (d.Version != 0) != (d.Initialize != nil) {
			t.Errorf("%s: version %d with initialize %s", c.msg, d.Version, d.Initialize)
		}
	}
}

// The routed initialize keeps its id and members byte for byte, but for params.
func TestDecideKeepsTheFrame(t *testing.T) {
	d := both.Decide([]byte(`{"id": 1.0 ,"jsonrpc":"2.0","method":"initialize","x-trace":[1, 2],"params":{"protocolVersion":1,"clientCapabilities":null}}`))
	want := `{"id":1.0,"jsonrpc":"2.0","method":"initialize","x-trace":[1, 2],"params":{"protocolVersion":1}}`
	if d.Version != V1 || string(d.Initialize) != want {
		t.Fatalf("got %d %s, want %s", d.Version, d.Initialize, want)
	}
}

func TestRewriteInitialize(t *testing.T) {
	for _, c := range []struct {
		name                string
		params              string
		requested, selected int
		want                string // or "error: ..." for an error containing it
	}{
		{"v1 as is", `{"protocolVersion":1,"clientCapabilities":{"fs":{"readTextFile":true}},"clientInfo":{"name":"z","version":"2"}}`, 1, 1,
			`{"protocolVersion":1,"clientCapabilities":{"fs":{"readTextFile":true}},"clientInfo":{"name":"z","version":"2"}}`},
		{"v1 from 0 on a v1-only agent", `{"protocolVersion":0}`, 0, 1, `{"protocolVersion":1}`},
		{"v1 drops a malformed capability and nulls", `{"protocolVersion":1,"clientCapabilities":{"terminal":"yes","fs":{"readTextFile":true}},"clientInfo":null,"_meta":5,"extra":[]}`, 1, 1,
			`{"protocolVersion":1,"clientCapabilities":{"fs":{"readTextFile":true}}}`},
		{"v1 keeps unknown members", `{"protocolVersion":1,"vendor":{"a":null}}`, 1, 1, `{"protocolVersion":1,"vendor":{}}`},
		{"v2 as is", `{"protocolVersion":2,"info":{"name":"c","version":"1","title":null},"capabilities":{"auth":{"terminal":{}}},"_meta":{"k":null}}`, 2, 2,
			`{"protocolVersion":2,"info":{"name":"c","version":"1"},"capabilities":{"auth":{"terminal":{}}},"_meta":{"k":null}}`},
		{"v2 default capabilities", `{"protocolVersion":2,"info":{"name":"c","version":"1"}}`, 2, 2,
			`{"protocolVersion":2,"info":{"name":"c","version":"1"},"capabilities":{}}`},
		{"v2 drops a malformed capability", `{"protocolVersion":2,"info":{"name":"c","version":"1","title":7},"capabilities":{"auth":{"terminal":5},"elicitation":{"form":{}}}}`, 2, 2,
			`{"protocolVersion":2,"info":{"name":"c","version":"1"},"capabilities":{"auth":{},"elicitation":{"form":{}}}}`},
		{"v2 capabilities not an object", `{"protocolVersion":2,"info":{"name":"c","version":"1"},"capabilities":[]}`, 2, 2,
			`{"protocolVersion":2,"info":{"name":"c","version":"1"},"capabilities":{}}`},
		{"v2 strict info", `{"protocolVersion":2,"info":{"name":"c"}}`, 2, 2, `error: missing required member`},
		{"v2 from 3, bad info", `{"protocolVersion":3,"info":{"name":"c"},"v3":true}`, 3, 2,
			`{"protocolVersion":2,"info":{"name":"unknown","version":"unknown"},"v3":true,"capabilities":{}}`},
		{"v2 downgraded to v1", `{"protocolVersion":2,"info":{"name":"c","version":"1"},"capabilities":{"auth":{"terminal":{},"_meta":{"a":1}},"elicitation":{"form":{}},"_meta":{"b":2}},"_meta":{"c":3}}`, 2, 1,
			`{"protocolVersion":1,"clientCapabilities":{"fs":{"readTextFile":false,"writeTextFile":false},"terminal":false,"session":{"configOptions":{"boolean":{}}},"plan":{},"auth":{"terminal":true,"_meta":{"a":1}},"elicitation":{"form":{}},"_meta":{"b":2}},"clientInfo":{"name":"c","version":"1"},"_meta":{"c":3}}`},
		{"v3 downgraded to v1, bad info", `{"protocolVersion":3,"info":5}`, 3, 1,
			`{"protocolVersion":1,"clientCapabilities":{"fs":{"readTextFile":false,"writeTextFile":false},"terminal":false,"session":{"configOptions":{"boolean":{}}},"plan":{},"auth":{"terminal":false}}}`},
	} {
		got, err := RewriteInitialize(jsontext.Value(c.params), c.requested, c.selected)
		if w, ok := strings.CutPrefix(c.want, "error: "); ok {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%s: got %s, %v; want an error with %q", c.name, got, err, w)
			}
			continue
		}
		if err != nil || string(got) != c.want {
			t.Errorf("%s: got\n%s (%v), want\n%s", c.name, got, err, c.want)
		}
	}
}

func TestDecideTooLarge(t *testing.T) {
	for head, want := range map[string]string{
		`{"jsonrpc":"2.0","id":7,"method":"initialize","params":{"protocolVersion":2,"info":{"name":"aaaa`: `{"jsonrpc":"2.0","id":7,"error":{"code":-32600,"message":"Invalid request","data":"message exceeds the 10-byte limit"}}`,
		`{"jsonrpc":"2.0","method":"x","params":{"aaaa`:                                                    `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid request","data":"message exceeds the 10-byte limit"}}`,
		`{"jsonrpc":"2.0","id":7,"result":{"aaaa`:                                                          ``,
	} {
		if got := both.DecideTooLarge([]byte(head), 10); string(got.Reply) != want || got.Version != 0 {
			t.Errorf("%s: got %s, want %s", head, got.Reply, want)
		}
	}
}

// FuzzDecide: Decide never panics; it replies with one JSON-RPC error response or routes with an
// initialize the chosen version's decoder takes, never both.
func FuzzDecide(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"initialize",` + v2Init + `}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":"s","method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{"fs":{"readTextFile":true}}}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":3,"info":5,"capabilities":{"auth":{"terminal":{}},"elicitation":7}}}`))
	f.Add([]byte(`[1]`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":{"a":1},"method":"x"}`))
	f.Fuzz(func(t *testing.T, msg []byte) {
		for _, c := range []Config{v1Only, v2Only, both} {
			d := c.Decide(msg)
			if d.Reply != nil {
				var r struct {
					JSONRPC string         `json:"jsonrpc"`
					ID      jsontext.Value `json:"id"`
					Error   *struct {
						Code    int    `json:"code"`
						Message string `json:"message"`
					} `json:"error"`
				}
				if err := json.Unmarshal(d.Reply, &r); err != nil || r.JSONRPC != "2.0" || r.ID == nil || r.Error == nil || r.Error.Message == "" || d.Version != 0 {
					t.Fatalf("%s: reply %s (%v)", msg, d.Reply, err)
				}
				continue
			}
			if d.Version == 0 {
				continue
			}
			var m struct {
				Method string         `json:"method"`
				Params jsontext.Value `json:"params"`
			}
			if err := json.Unmarshal(d.Initialize, &m); err != nil || m.Method != "initialize" {
				t.Fatalf("%s: routed %s (%v)", msg, d.Initialize, err)
			}
			var err error
			if d.Version == V1 {
				var p acp.InitializeRequest
				if err = json.Unmarshal(m.Params, &p); err == nil && p.ProtocolVersion != V1 {
					t.Fatalf("%s: routed v1 with %s", msg, m.Params)
				}
			} else {
				var p acpv2.InitializeRequest
				if err = json.Unmarshal(m.Params, &p); err == nil && p.ProtocolVersion != V2 {
					t.Fatalf("%s: routed v2 with %s", msg, m.Params)
				}
			}
			if err != nil {
				t.Fatalf("%s: routed v%d params %s that do not decode: %v", msg, d.Version, m.Params, err)
			}
		}
	})
}

// canonical reads a value once: deep nesting (within jsontext's depth limit) and long values pass
// through it whole.
func TestCanonicalDeep(t *testing.T) {
	deep := strings.Repeat(`[{"a":null,"b":[],"c":`, 2000) + `"` + strings.Repeat("x", 1<<20) + `"` + strings.Repeat(`}]`, 2000)
	want := strings.Repeat(`[{"c":`, 2000) + `"` + strings.Repeat("x", 1<<20) + `"` + strings.Repeat(`}]`, 2000)
	if got := canonical(jsontext.Value(deep)); string(got) != want {
		t.Fatalf("got %d bytes, want %d", len(got), len(want))
	}
	got, err := RewriteInitialize(jsontext.Value(`{"protocolVersion":1,"vendor":`+deep+`}`), 1, 1)
	if err != nil || string(got) != `{"protocolVersion":1,"vendor":`+want+`}` {
		t.Fatalf("rewrite: %d bytes, %v", len(got), err)
	}
}
