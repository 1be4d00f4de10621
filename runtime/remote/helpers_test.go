package remote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"go.uber.org/goleak"

	"github.com/bridgekit/bridgekit/runtime/frame"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// memPair is an in-memory frame transport pair.
type memEnd struct {
	in, out chan []byte
	done    chan struct{}
	once    *sync.Once
}

func memPair() (*memEnd, *memEnd) {
	a, b := make(chan []byte, 16), make(chan []byte, 16)
	done, once := make(chan struct{}), &sync.Once{}
	return &memEnd{in: a, out: b, done: done, once: once}, &memEnd{in: b, out: a, done: done, once: once}
}

func (e *memEnd) Read(ctx context.Context) ([]byte, error) {
	select {
	case b := <-e.in:
		return b, nil
	case <-e.done:
		select {
		case b := <-e.in:
			return b, nil
		default:
		}
		return nil, io.EOF
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (e *memEnd) Write(ctx context.Context, b []byte) error {
	select {
	case <-e.done:
		return errors.New("closed")
	default:
	}
	select {
	case e.out <- append([]byte(nil), b...):
		return nil
	case <-e.done:
		return errors.New("closed")
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (e *memEnd) Close() error { e.once.Do(func() { close(e.done) }); return nil }

var _ frame.Transport = (*memEnd)(nil)

// fakeAgent is a scripted ACP agent at the frame level. A prompt "N updates" streams N updates, asks
// one permission half way and ends the turn; "until cancelled" streams until session/cancel.
type fakeAgent struct {
	t        frame.Transport
	mu       sync.Mutex
	sessions int
	pending  map[string]chan jsontext.Value // the agent's requests awaiting answers, by id
	nextID   int
	cancel   map[string]chan struct{}
	wg       sync.WaitGroup
}

type rpcMsg struct {
	ID     jsontext.Value `json:"id,omitzero"`
	Method string         `json:"method,omitzero"`
	Params jsontext.Value `json:"params,omitzero"`
	Result jsontext.Value `json:"result,omitzero"`
	Error  jsontext.Value `json:"error,omitzero"`
}

func runFakeAgent(t frame.Transport) *fakeAgent {
	a := &fakeAgent{t: t, pending: map[string]chan jsontext.Value{}, cancel: map[string]chan struct{}{}}
	a.wg.Add(1)
	go a.loop()
	return a
}

func (a *fakeAgent) send(format string, args ...any) error {
	return a.t.Write(context.Background(), fmt.Appendf(nil, format, args...))
}

func (a *fakeAgent) loop() {
	defer a.wg.Done()
	defer a.t.Close()
	for {
		b, err := a.t.Read(context.Background())
		if err != nil {
			a.mu.Lock()
			for _, ch := range a.cancel {
				select {
				case <-ch:
				default:
					close(ch)
				}
			}
			a.mu.Unlock()
			return
		}
		var m rpcMsg
		if json.Unmarshal(b, &m) != nil {
			continue
		}
		switch {
		case m.Method == "" && m.ID != nil:
			a.mu.Lock()
			ch := a.pending[string(m.ID)]
			delete(a.pending, string(m.ID))
			a.mu.Unlock()
			if ch != nil {
				ch <- jsontext.Value(m.Result)
			}
		case m.Method == "initialize":
			a.send(`{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":1,"agentCapabilities":{"loadSession":true},"authMethods":[]}}`, m.ID)
		case m.Method == "session/new":
			a.mu.Lock()
			a.sessions++
			sid := fmt.Sprintf("sess-%d", a.sessions)
			a.cancel[sid] = make(chan struct{})
			a.mu.Unlock()
			a.send(`{"jsonrpc":"2.0","id":%s,"result":{"sessionId":%q}}`, m.ID, sid)
		case m.Method == "session/cancel":
			var p struct {
				SessionID string `json:"sessionId"`
			}
			json.Unmarshal(m.Params, &p)
			a.mu.Lock()
			if ch := a.cancel[p.SessionID]; ch != nil {
				select {
				case <-ch:
				default:
					close(ch)
				}
			}
			a.mu.Unlock()
		case m.Method == "session/prompt":
			a.wg.Add(1)
			go a.prompt(m)
		case m.ID != nil:
			a.send(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"Method not found"}}`, m.ID)
		}
	}
}

func (a *fakeAgent) prompt(m rpcMsg) {
	defer a.wg.Done()
	var p struct {
		SessionID string `json:"sessionId"`
		Prompt    []struct {
			Text string `json:"text"`
		} `json:"prompt"`
	}
	json.Unmarshal(m.Params, &p)
	text := ""
	if len(p.Prompt) > 0 {
		text = p.Prompt[0].Text
	}
	a.mu.Lock()
	cancelled := a.cancel[p.SessionID]
	a.mu.Unlock()
	n := 0
	fmt.Sscanf(text, "%d updates", &n)
	forever := strings.HasPrefix(text, "until cancelled")
	update := func(i int) {
		a.send(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":%q,"update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"chunk %d"}}}}`, p.SessionID, i)
	}
	for i := 0; forever || i < n; i++ {
		select {
		case <-cancelled:
			a.send(`{"jsonrpc":"2.0","id":%s,"result":{"stopReason":"cancelled"}}`, m.ID)
			return
		default:
		}
		if i == n/2 && !forever {
			a.mu.Lock()
			a.nextID++
			id := fmt.Sprint(a.nextID)
			ch := make(chan jsontext.Value, 1)
			a.pending[id] = ch
			a.mu.Unlock()
			a.send(`{"jsonrpc":"2.0","id":%s,"method":"session/request_permission","params":{"sessionId":%q,"toolCall":{"toolCallId":"call_1","title":"write"},"options":[{"optionId":"ok","name":"Allow","kind":"allow_once"}]}}`, id, p.SessionID)
			select {
			case res := <-ch:
				if !strings.Contains(string(res), `"ok"`) {
					a.send(`{"jsonrpc":"2.0","id":%s,"result":{"stopReason":"refusal"}}`, m.ID)
					return
				}
			case <-cancelled:
				a.send(`{"jsonrpc":"2.0","id":%s,"result":{"stopReason":"cancelled"}}`, m.ID)
				return
			}
		}
		update(i)
	}
	a.send(`{"jsonrpc":"2.0","id":%s,"result":{"stopReason":"end_turn"}}`, m.ID)
}

// fakeBackend starts a fakeAgent per connection: on one end of an in-memory pair (the Server's pump
// reads the other), or, inProcess, through InProcess (the agent's writes are delivered from its own
// goroutines).
type fakeBackend struct {
	inProcess bool
	wrapped   bool // InProcess's transport wrapped by the Backend, as a logging decorator would
	mu        sync.Mutex
	agents    []*fakeAgent
	starts    int
}

func (f *fakeBackend) start(ctx context.Context, info ConnInfo) (frame.Transport, error) {
	srv, agentEnd := memPair()
	f.run(agentEnd)
	return srv, nil
}

func (f *fakeBackend) run(t frame.Transport) {
	f.mu.Lock()
	f.agents = append(f.agents, runFakeAgent(t))
	f.starts++
	f.mu.Unlock()
}

// backend is the Backend that starts f's agents.
func (f *fakeBackend) backend() Backend {
	if f.inProcess {
		b := InProcess(func(ctx context.Context, info ConnInfo, t frame.Transport) error {
			f.run(t)
			return nil
		})
		if f.wrapped {
			return func(ctx context.Context, info ConnInfo) (frame.Transport, error) {
				t, err := b(ctx, info)
				return struct{ frame.Transport }{t}, err
			}
		}
		return b
	}
	return f.start
}

// backends are the ways an agent is attached, for the tests that run over each.
var backends = []struct {
	name               string
	inProcess, wrapped bool
}{{"pump", false, false}, {"in-process", true, false}, {"in-process-wrapped", true, true}}

func (f *fakeBackend) wait() {
	f.mu.Lock()
	agents := f.agents
	f.mu.Unlock()
	for _, a := range agents {
		a.wg.Wait()
	}
}

// client drives a session at the frame level, as the engine would: it answers permission requests and
// records what it reads.
type client struct {
	t       Transport
	tb      testing.TB
	updates []string
	nextID  int
	onFrame func() // called with every frame read
}

func (c *client) call(method, params string) rpcMsg {
	c.tb.Helper()
	c.nextID++
	id := fmt.Sprint(c.nextID)
	if err := c.t.Write(context.Background(), fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"method":%q,"params":%s}`, id, method, params)); err != nil {
		c.tb.Fatalf("write %s: %v", method, err)
	}
	for {
		b, err := c.t.Read(context.Background())
		if err != nil {
			c.tb.Fatalf("read (awaiting %s): %v", method, err)
		}
		if c.onFrame != nil {
			c.onFrame()
		}
		var m rpcMsg
		if err := json.Unmarshal(b, &m); err != nil {
			c.tb.Fatalf("frame %s: %v", b, err)
		}
		switch {
		case m.Method == "session/update":
			var p struct {
				Update struct {
					Content struct {
						Text string `json:"text"`
					} `json:"content"`
				} `json:"update"`
			}
			json.Unmarshal(m.Params, &p)
			c.updates = append(c.updates, p.Update.Content.Text)
		case m.Method == "session/request_permission":
			c.t.Write(context.Background(), fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"result":{"outcome":{"outcome":"selected","optionId":"ok"}}}`, m.ID))
		case m.Method == "" && string(m.ID) == id:
			if m.Error != nil {
				c.tb.Fatalf("%s: error %s", method, m.Error)
			}
			return m
		}
	}
}

func wantUpdates(t testing.TB, got []string, n int) {
	t.Helper()
	if len(got) != n {
		t.Fatalf("got %d updates, want %d: %q", len(got), n, got)
	}
	for i, u := range got {
		if u != fmt.Sprintf("chunk %d", i) {
			t.Fatalf("update %d is %q (out of order or repeated): %q", i, u, got)
		}
	}
}
