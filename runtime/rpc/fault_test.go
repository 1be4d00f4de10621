package rpc_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"go.uber.org/goleak"

	"github.com/bridgekit/bridgekit/runtime/jsonrpc"
	"github.com/bridgekit/bridgekit/runtime/ndjson"
	"github.com/bridgekit/bridgekit/runtime/rpc"
)

// Fault injection over real pipes: the test binary re-executes itself as a
// misbehaving peer, selected by faultPeerEnv, connected to a Conn in the
// test by its stdin and stdout.

const faultPeerEnv = "BRIDGEKIT_RPC_FAULT_PEER"

// init turns the process into a fault peer when faultPeerEnv is set. It runs
// before TestMain, so neither the tests nor goleak run in the child.
func init() {
	if mode := os.Getenv(faultPeerEnv); mode != "" {
		os.Exit(runFaultPeer(mode))
	}
}

// faultTimeout bounds every wait of the fault tests.
const faultTimeout = 10 * time.Second

const (
	ackCount        = 200       // requests and notifications of the "ack" peer
	garbageLines    = 500       // garbage lines of the "garbage" peer
	hugeLineSize    = 100 << 20 // bytes in the "huge" peer's oversized line
	faultCallResult = `"ok"`
)

// peerMessage is what a fault peer reads of the Conn's messages.
type peerMessage struct {
	ID     jsontext.Value `json:"id"`
	Method string         `json:"method"`
	Params jsontext.Value `json:"params"`
	Result jsontext.Value `json:"result"`
}

// faultPeer is the child's side: it reads our messages from stdin and
// writes raw lines to stdout.
type faultPeer struct {
	in  *bufio.Reader
	out *os.File
}

// next reads the next message; ok is false at EOF.
func (p *faultPeer) next() (m peerMessage, ok bool) {
	line, err := p.in.ReadBytes('\n')
	if err != nil {
		return m, false
	}
	if err := json.Unmarshal(line, &m); err != nil {
		fmt.Fprintf(os.Stderr, "fault peer: bad line %q: %v\n", line, err)
		os.Exit(100)
	}
	return m, true
}

// nextRequest reads messages up to the next request.
func (p *faultPeer) nextRequest() (peerMessage, bool) {
	for {
		m, ok := p.next()
		if !ok || m.ID != nil && m.Method != "" {
			return m, ok
		}
	}
}

func (p *faultPeer) write(s string) {
	if _, err := io.WriteString(p.out, s); err != nil {
		fmt.Fprintf(os.Stderr, "fault peer: write: %v\n", err)
		os.Exit(101)
	}
}

func (p *faultPeer) respond(id jsontext.Value, result string) {
	p.write(`{"jsonrpc":"2.0","id":` + string(id) + `,"result":` + result + "}\n")
}

// drain reads and counts the lines of stdin until EOF.
func (p *faultPeer) drain() int {
	n := 0
	for {
		if _, err := p.in.ReadBytes('\n'); err != nil {
			return n
		}
		n++
	}
}

// drainInBackground keeps reading stdin, so that the Conn's replies to what
// the peer sends never block it; the returned channel is closed at EOF.
func (p *faultPeer) drainInBackground() <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.drain()
	}()
	return done
}

// runFaultPeer runs the peer selected by mode and returns its exit code.
func runFaultPeer(mode string) int {
	p := &faultPeer{in: bufio.NewReaderSize(os.Stdin, 64<<10), out: os.Stdout}
	switch mode {
	case "die":
		// Read three requests, answer none and die.
		for range 3 {
			p.nextRequest()
		}
		return 3
	case "close-stdout":
		// Read two requests, close stdout, keep reading; the exit code
		// tells how many lines arrived in all.
		p.nextRequest()
		p.nextRequest()
		os.Stdout.Close()
		return 2 + p.drain()
	case "unterminated":
		// Send two requests, the last without its newline, and close
		// stdout: both must still be answered. Exit 0 if they are.
		p.write(`{"jsonrpc":"2.0","id":1,"method":"echo","params":"first"}` + "\n")
		p.write(`{"jsonrpc":"2.0","id":2,"method":"echo","params":"last"}`)
		os.Stdout.Close()
		got := map[string]string{}
		for {
			m, ok := p.next()
			if !ok {
				break
			}
			got[string(m.ID)] = string(m.Result)
		}
		if got["1"] != `"first"` || got["2"] != `"last"` {
			fmt.Fprintf(os.Stderr, "fault peer: replies %v\n", got)
			return 1
		}
		return 0
	case "half-line":
		m, _ := p.nextRequest()
		p.write(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":"never fin`)
		p.drain() // stall until our stdin closes
		return 0
	case "garbage":
		m, _ := p.nextRequest()
		done := p.drainInBackground()
		rng := rand.New(rand.NewPCG(1, 2))
		for i := range garbageLines {
			switch i % 5 {
			case 0:
				p.write("this is not JSON\n")
			case 1:
				p.write(garbageBinary(rng) + "\n")
			case 2:
				p.write(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":` + "\n") // truncated
			case 3:
				p.write("[1,2,3]\n") // JSON, but no message
			case 4:
				p.write(`{"jsonrpc":"2.0","id":` + string(m.ID) + "}\n") // neither result nor error
			}
		}
		p.respond(m.ID, faultCallResult)
		<-done
		return 0
	case "huge":
		m, _ := p.nextRequest()
		done := p.drainInBackground()
		p.write(`{"jsonrpc":"2.0","method":"huge","params":"`)
		chunk := strings.Repeat("a", 64<<10)
		for range hugeLineSize / len(chunk) {
			p.write(chunk)
		}
		p.write("\"}\n")
		p.respond(m.ID, faultCallResult)
		<-done
		return 0
	case "reuse-id":
		// Answer every request twice.
		for {
			m, ok := p.nextRequest()
			if !ok {
				return 0
			}
			p.respond(m.ID, `"first"`)
			p.respond(m.ID, `"second"`)
		}
	case "unknown-id":
		// Answer ids never asked, then the request.
		for {
			m, ok := p.nextRequest()
			if !ok {
				return 0
			}
			p.respond(jsontext.Value("424242"), `"stray"`)
			p.respond(jsontext.Value(`"not ours"`), `"stray"`)
			p.write(`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"stray"}}` + "\n")
			p.respond(m.ID, faultCallResult)
		}
	case "no-read":
		// Never read; the test kills us.
		time.Sleep(time.Minute)
		return 0
	case "ack":
		// Answer ackCount requests, note ackCount notifications, report the
		// notifications received and exit at once.
		var seqs []int
		requests := 0
		for requests < ackCount || len(seqs) < ackCount {
			m, ok := p.next()
			if !ok {
				fmt.Fprintf(os.Stderr, "fault peer: EOF after %d requests and %d notifications\n", requests, len(seqs))
				return 102
			}
			if m.ID != nil {
				requests++
				p.respond(m.ID, string(m.Params))
				continue
			}
			var seq int
			if err := json.Unmarshal(m.Params, &seq); err != nil {
				fmt.Fprintf(os.Stderr, "fault peer: notification params %s: %v\n", m.Params, err)
				return 103
			}
			seqs = append(seqs, seq)
		}
		report, _ := json.Marshal(seqs)
		p.write(`{"jsonrpc":"2.0","method":"received","params":` + string(report) + "}\n")
		return 0
	}
	fmt.Fprintf(os.Stderr, "fault peer: unknown mode %q\n", mode)
	return 104
}

// garbageBinary returns up to 200 random bytes that hold no '\n' and are
// not blank.
func garbageBinary(rng *rand.Rand) string {
	b := make([]byte, 1+rng.IntN(200))
	for i := range b {
		b[i] = byte(rng.UintN(256))
		if b[i] == '\n' {
			b[i] = 0
		}
	}
	b[0] = 0xff
	return string(b)
}

// childPeer is a fault peer process connected to a Conn.
type childPeer struct {
	t         *testing.T
	cmd       *exec.Cmd
	c         *rpc.Conn
	exited    chan struct{} // closed once the process has been waited for
	frameErrs chan *rpc.FrameError
	read      chan string // what the Conn reads from the child ("half-line" only)
}

// tapReader hands what it reads from the child to read, if it can.
type tapReader struct {
	*os.File
	read chan string
}

func (r tapReader) Read(b []byte) (int, error) {
	n, err := r.File.Read(b)
	if r.read != nil {
		select {
		case r.read <- string(b[:n]):
		default:
		}
	}
	return n, err
}

// startChildPeer starts the fault peer mode and a Conn talking to it over
// OS pipes. At the end of the test the Conn is closed, the child waited for
// (killed if it does not exit by itself) and goroutine leaks checked.
func startChildPeer(t *testing.T, mode string, h rpc.Handler, opts *rpc.Options) *childPeer {
	t.Helper()
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	childIn, toChild, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	fromChild, childOut, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	// Under the race detector a process sleeps for a second on exit
	// unless told otherwise.
	cmd.Env = append(os.Environ(), faultPeerEnv+"="+mode, "GORACE="+strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	// *os.File streams are handed to the child as they are: exec starts no
	// copying goroutines.
	cmd.Stdin, cmd.Stdout, cmd.Stderr = childIn, childOut, os.Stderr
	err = cmd.Start()
	childIn.Close()
	childOut.Close()
	if err != nil {
		toChild.Close()
		fromChild.Close()
		t.Fatal(err)
	}
	p := &childPeer{t: t, cmd: cmd, exited: make(chan struct{}), frameErrs: make(chan *rpc.FrameError, 2*garbageLines)}
	if mode == "half-line" {
		p.read = make(chan string, 1<<10)
	}
	go func() {
		cmd.Wait()
		close(p.exited)
	}()
	var o rpc.Options
	if opts != nil {
		o = *opts
	}
	o.OnFrameError = func(fe *rpc.FrameError) {
		select {
		case p.frameErrs <- fe:
		default:
			t.Errorf("frame error dropped: %v", fe)
		}
	}
	p.c = jsonrpc.NewConn(tapReader{fromChild, p.read}, toChild, h, &o)
	t.Cleanup(func() {
		p.c.Close()
		select {
		case <-p.exited:
		case <-time.After(faultTimeout):
			t.Errorf("peer %q did not exit after Close; killing it", mode)
			cmd.Process.Kill()
			<-p.exited
		}
	})
	return p
}

// exitCode waits for the child to exit and returns its exit code.
func (p *childPeer) exitCode() int {
	p.t.Helper()
	waitWithin(p.t, p.exited)
	return p.cmd.ProcessState.ExitCode()
}

// kill ends the child now.
func (p *childPeer) kill() {
	p.cmd.Process.Kill()
	waitWithin(p.t, p.exited)
}

// frameErrors returns the frame errors reported so far.
func (p *childPeer) frameErrors() []*rpc.FrameError {
	var fes []*rpc.FrameError
	for {
		select {
		case fe := <-p.frameErrs:
			fes = append(fes, fe)
		default:
			return fes
		}
	}
}

// reported returns the frame errors of the frames read so far, as the diagnostics goroutine reports them:
// all but those the connection counted as unreported.
func (p *childPeer) reported() []*rpc.FrameError {
	p.t.Helper()
	st := p.c.Stats()
	n := -int(st.Unreported)
	for _, k := range st.FrameErrors {
		n += int(k)
	}
	fes := make([]*rpc.FrameError, n)
	for i := range fes {
		fes[i] = waitWithin(p.t, p.frameErrs)
	}
	return append(fes, p.frameErrors()...)
}

// waitWithin returns the value sent on ch, failing the test after
// faultTimeout.
func waitWithin[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(faultTimeout):
		t.Fatalf("not done within %v", faultTimeout)
		var zero T
		return zero
	}
}

// checkShutDown checks that c has shut down: Err says so and calls fail at
// once.
func checkShutDown(t *testing.T, c *rpc.Conn) {
	t.Helper()
	waitWithin(t, c.Done())
	if err := c.Err(); !errors.Is(err, rpc.ErrClosed) {
		t.Errorf("Err() = %v, want ErrClosed", err)
	}
	if err := c.Call(context.Background(), "m", nil, nil); !errors.Is(err, rpc.ErrClosed) {
		t.Errorf("Call after shutdown = %v, want ErrClosed", err)
	}
}

func TestFaultPeerDiesMidCall(t *testing.T) {
	p := startChildPeer(t, "die", nil, nil)
	var calls []<-chan error
	for range 3 {
		calls = append(calls, callAsync(context.Background(), p.c, "m", nil, nil))
	}
	for _, done := range calls {
		if err := waitWithin(t, done); !errors.Is(err, rpc.ErrClosed) || !errors.Is(err, io.EOF) {
			t.Fatalf("pending call err = %v, want ErrClosed and io.EOF", err)
		}
	}
	if code := p.exitCode(); code != 3 {
		t.Fatalf("peer exit code %d, want 3", code)
	}
	checkShutDown(t, p.c)
}

func TestFaultPeerClosesStdout(t *testing.T) {
	p := startChildPeer(t, "close-stdout", nil, nil)
	a := callAsync(context.Background(), p.c, "a", nil, nil)
	b := callAsync(context.Background(), p.c, "b", nil, nil)
	for _, done := range []<-chan error{a, b} {
		if err := waitWithin(t, done); !errors.Is(err, rpc.ErrClosed) || !errors.Is(err, io.EOF) {
			t.Fatalf("pending call err = %v, want ErrClosed and io.EOF", err)
		}
	}
	checkShutDown(t, p.c)

	// The peer still reads, but later calls fail at once without writing.
	start := time.Now()
	if err := p.c.Notify(context.Background(), "n", nil); !errors.Is(err, rpc.ErrClosed) {
		t.Fatalf("Notify = %v, want ErrClosed", err)
	}
	if err := p.c.Call(context.Background(), "c", nil, nil); !errors.Is(err, rpc.ErrClosed) {
		t.Fatalf("Call = %v, want ErrClosed", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("failing Notify and Call took %v", d)
	}
	closeWithin(t, p.c, time.Second)
	if code := p.exitCode(); code != 2 {
		t.Fatalf("peer read %d lines in all, want the 2 requests only", code)
	}
}

// TestFaultPeerUnterminatedLastLine: a peer that ends its output with an
// unterminated line and closes it gets every request answered.
func TestFaultPeerUnterminatedLastLine(t *testing.T) {
	p := startChildPeer(t, "unterminated", methods{
		"echo": func(_ context.Context, req *rpc.Request) (any, error) { return req.Params, nil },
	}, &rpc.Options{MaxConcurrentRequests: 2})
	checkShutDown(t, p.c)
	if !errors.Is(p.c.Err(), io.EOF) {
		t.Fatalf("Err() = %v, want io.EOF", p.c.Err())
	}
	if code := p.exitCode(); code != 0 {
		t.Fatalf("peer exit code %d: replies missing", code)
	}
}

func TestFaultPeerStallsMidLine(t *testing.T) {
	p := startChildPeer(t, "half-line", nil, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	call := callAsync(ctx, p.c, "m", nil, nil)
	for got := ""; !strings.Contains(got, "never fin"); {
		got += waitWithin(t, p.read) // the reply stops mid-line
	}
	cancel()
	if err := waitWithin(t, call); !errors.Is(err, context.Canceled) {
		t.Fatalf("Call = %v, want context.Canceled", err)
	}
	closeWithin(t, p.c, time.Second)
	checkShutDown(t, p.c)
	if code := p.exitCode(); code != 0 {
		t.Fatalf("peer exit code %d", code)
	}
}

func TestFaultPeerFloodsGarbage(t *testing.T) {
	p := startChildPeer(t, "garbage", nil, nil)
	ctx, cancel := context.WithTimeout(context.Background(), faultTimeout)
	defer cancel()
	var result string
	if err := p.c.Call(ctx, "m", nil, &result); err != nil || result != "ok" {
		t.Fatalf("Call = %q, %v", result, err)
	}
	// Every garbage line came before the response. Reports are made from a
	// goroutine of their own and may be dropped when it falls behind, but
	// those made come in order.
	fes := p.reported()
	want := make([]rpc.FrameErrorKind, garbageLines)
	for i := range want {
		want[i] = rpc.FrameMalformed
		if i%5 >= 3 {
			want[i] = rpc.FrameInvalid
		}
	}
	got := make([]rpc.FrameErrorKind, len(fes))
	for i, fe := range fes {
		got[i] = fe.Kind
	}
	if len(got) == 0 || !isSubsequence(got, want) {
		t.Fatalf("frame errors %v, want those of %v", got, want)
	}
	t.Logf("%d of %d bad lines reported", len(got), garbageLines)
	closeWithin(t, p.c, time.Second)
}

// isSubsequence reports whether got is want with some elements left out.
func isSubsequence[T comparable](got, want []T) bool {
	i := 0
	for _, g := range got {
		for i < len(want) && want[i] != g {
			i++
		}
		if i == len(want) {
			return false
		}
		i++
	}
	return true
}

func TestFaultPeerSendsHugeLine(t *testing.T) {
	p := startChildPeer(t, "huge", nil, nil)
	ctx, cancel := context.WithTimeout(context.Background(), faultTimeout)
	defer cancel()

	// Sample the heap while the line streams through.
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	stopSampling := sampleHeap(2*time.Millisecond, func(m *runtime.MemStats) uint64 { return m.HeapAlloc })
	var result string
	err := p.c.Call(ctx, "m", nil, &result)
	heapPeak := stopSampling()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	if err != nil || result != "ok" {
		t.Fatalf("Call = %q, %v", result, err)
	}
	fes := p.reported()
	if len(fes) != 1 || fes[0].Kind != rpc.FrameTooLarge || !errors.Is(fes[0], ndjson.ErrFrameTooLarge) {
		t.Fatalf("frame errors %v, want one FrameTooLarge", fes)
	}
	growth := int64(heapPeak) - int64(before.HeapAlloc)
	t.Logf("%d MiB line: heap peak %+d KiB, %d KiB allocated in all", hugeLineSize>>20, growth>>10, (after.TotalAlloc-before.TotalAlloc)>>10)
	// With the default 16 MiB limit the reader buffers up to 16 MiB before
	// it knows that the line is too long (doubling its buffer: 32 MiB
	// allocated in all, at most 24 MiB live); the rest is skipped unbuffered.
	if growth > 48<<20 {
		t.Errorf("heap grew by %d MiB while skipping a %d MiB line", growth>>20, hugeLineSize>>20)
	}
	if total := after.TotalAlloc - before.TotalAlloc; total > 64<<20 {
		t.Errorf("%d MiB allocated while skipping a %d MiB line", total>>20, hugeLineSize>>20)
	}
	// Still usable.
	if err := p.c.Notify(ctx, "n", nil); err != nil {
		t.Fatal(err)
	}
	closeWithin(t, p.c, time.Second)
}

func TestFaultPeerReusesID(t *testing.T) {
	p := startChildPeer(t, "reuse-id", nil, nil)
	ctx, cancel := context.WithTimeout(context.Background(), faultTimeout)
	defer cancel()
	for i := range 2 {
		var result string
		if err := p.c.Call(ctx, "m", nil, &result); err != nil || result != "first" {
			t.Fatalf("call %d = %q, %v; want the first answer", i, result, err)
		}
		fe := waitWithin(t, p.frameErrs)
		if fe.Kind != rpc.FrameUnknownResponse || !strings.Contains(fe.Snippet, "second") {
			t.Fatalf("frame error %v, want the second answer reported as an unknown response", fe)
		}
	}
	closeWithin(t, p.c, time.Second)
}

func TestFaultPeerAnswersUnknownID(t *testing.T) {
	p := startChildPeer(t, "unknown-id", nil, nil)
	ctx, cancel := context.WithTimeout(context.Background(), faultTimeout)
	defer cancel()
	for i := range 2 {
		var result string
		if err := p.c.Call(ctx, "m", nil, &result); err != nil || result != "ok" {
			t.Fatalf("call %d = %q, %v", i, result, err)
		}
		for range 3 {
			if fe := waitWithin(t, p.frameErrs); fe.Kind != rpc.FrameUnknownResponse {
				t.Fatalf("frame error %v, want an unknown response", fe)
			}
		}
	}
	closeWithin(t, p.c, time.Second)
	if fes := p.frameErrors(); len(fes) != 0 {
		t.Fatalf("more frame errors: %v", fes)
	}
}

func TestFaultPeerReadsNothing(t *testing.T) {
	p := startChildPeer(t, "no-read", nil, nil)
	defer p.kill()

	// Notifications of 1 KiB go out until the pipe is full; the one whose
	// Write blocks holds the writer.
	payload := jsontext.Value(`"` + strings.Repeat("x", 1<<10) + `"`)
	var sent int
	flooding := make(chan error, 1)
	go func() {
		for {
			if err := p.c.Notify(context.Background(), "n", payload); err != nil {
				flooding <- err
				return
			}
			sent++
		}
	}()
	select {
	case err := <-flooding:
		t.Fatalf("Notify failed while the pipe filled up: %v", err)
	case <-time.After(200 * time.Millisecond):
	}

	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if err := p.c.Call(ctx, "m", nil, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Call = %v, want DeadlineExceeded", err)
	}
	if err := p.c.Notify(ctx, "m", nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Notify = %v, want DeadlineExceeded", err)
	}

	closeWithin(t, p.c, time.Second)
	if err := waitWithin(t, flooding); !errors.Is(err, rpc.ErrClosed) {
		t.Fatalf("blocked Notify = %v, want ErrClosed", err)
	}
	t.Logf("%d notifications of 1 KiB written before the pipe was full", sent)
	if sent > 1<<10 {
		t.Errorf("%d KiB written to a peer that reads nothing", sent)
	}
	checkShutDown(t, p.c)
}

func TestFaultPeerAcknowledgesThenExits(t *testing.T) {
	var mu sync.Mutex
	var received []int
	reported := make(chan struct{})
	h := methods{"received": func(_ context.Context, req *rpc.Request) (any, error) {
		mu.Lock()
		defer mu.Unlock()
		if err := json.Unmarshal(req.Params, &received); err != nil {
			t.Errorf("report %s: %v", req.Params, err)
		}
		close(reported)
		return nil, nil
	}}
	p := startChildPeer(t, "ack", h, nil)
	ctx, cancel := context.WithTimeout(context.Background(), faultTimeout)
	defer cancel()

	const workers = 8
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for seq := w; seq < ackCount; seq += workers {
				if err := p.c.Notify(ctx, "note", seq); err != nil {
					t.Errorf("Notify(%d) = %v", seq, err)
				}
				var echo int
				if err := p.c.Call(ctx, "echo", seq, &echo); err != nil || echo != seq {
					t.Errorf("Call(%d) = %d, %v", seq, echo, err)
				}
			}
		})
	}
	wg.Wait()
	waitWithin(t, reported)
	if code := p.exitCode(); code != 0 {
		t.Fatalf("peer exit code %d", code)
	}
	checkShutDown(t, p.c)
	if !errors.Is(p.c.Err(), io.EOF) {
		t.Fatalf("Err() = %v, want io.EOF", p.c.Err())
	}
	mu.Lock()
	defer mu.Unlock()
	slices.Sort(received)
	want := make([]int, ackCount)
	for i := range want {
		want[i] = i
	}
	if !slices.Equal(received, want) {
		t.Fatalf("peer received notifications %v, want 0..%d once each", received, ackCount-1)
	}
	if fes := p.frameErrors(); len(fes) != 0 {
		t.Fatalf("frame errors: %v", fes)
	}
}
