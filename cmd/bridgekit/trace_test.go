package main

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/frames"
	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/store"
	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/tracelog"
	"github.com/bridgekit/bridgekit/gen/harn"
)

// bins holds the binaries TestMain builds: bridgekit itself (signals
// need a process of its own) and examples/host, and dir, theirs (where
// testBins builds the probe and replay tests' programs).
var bins struct{ bridgekit, host, hostDir, dir string }

func TestMain(m *testing.M) {
	flag.Parse()
	if f := flag.Lookup("test.list"); f != nil && f.Value.String() != "" {
		os.Exit(m.Run()) // listing tests (make fuzz) needs no binaries
	}
	dir, err := os.MkdirTemp("", "bridgekit-cmd")
	if err != nil {
		panic(err)
	}
	bins.dir = dir
	bins.bridgekit = filepath.Join(dir, "bridgekit")
	bins.host = filepath.Join(dir, "host")
	bins.hostDir, _ = filepath.Abs("../../examples/host")
	// examples/host is built in the root module, whose go.sum has its
	// dependencies.
	for _, b := range []struct{ dir, out, pkg string }{{".", bins.bridgekit, "."}, {"../..", bins.host, "./examples/host"}} {
		c := exec.Command("go", "build", "-o", b.out, b.pkg)
		c.Dir = b.dir
		if out, err := c.CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "go build %v: %v\n%s", b, err, out)
			os.Exit(1)
		}
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// traced is a bridgekit trace process started by a test.
type traced struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout io.ReadCloser
	stderr bytes.Buffer
	out    string // the --out file
}

func startTrace(t *testing.T, flags []string, child ...string) *traced {
	t.Helper()
	tr := &traced{out: filepath.Join(t.TempDir(), "trace.jsonl")}
	args := append([]string{"trace", "--out", tr.out}, flags...)
	tr.cmd = exec.Command(bins.bridgekit, append(append(args, "--"), child...)...)
	tr.cmd.Stderr = &tr.stderr
	var err error
	if tr.stdin, err = tr.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if tr.stdout, err = tr.cmd.StdoutPipe(); err != nil {
		t.Fatal(err)
	}
	if err := tr.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if tr.cmd.ProcessState == nil {
			tr.cmd.Process.Kill()
			tr.cmd.Wait()
		}
	})
	return tr
}

// wait waits for trace to exit and returns its status.
func (tr *traced) wait(t *testing.T) int {
	t.Helper()
	done := make(chan struct{})
	go func() { tr.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		tr.cmd.Process.Kill()
		<-done
		t.Fatalf("trace did not exit; stderr:\n%s", tr.stderr.String())
	}
	return tr.cmd.ProcessState.ExitCode()
}

func (tr *traced) records(t *testing.T) []*tracelog.Record {
	t.Helper()
	return readTrace(t, tr.out)
}

// readTrace reads the records of the trace file path.
func readTrace(t *testing.T, path string) []*tracelog.Record {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := tracelog.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// replay concatenates the recorded lines of one direction, as they went
// over the wire.
func replay(recs []*tracelog.Record, dir frames.Direction) []byte {
	var b []byte
	for _, r := range recs {
		if r.Type == tracelog.TypeFrame && r.Dir == dir {
			b = append(b, r.Line()...)
			if !r.Partial {
				b = append(b, '\n')
			}
		}
	}
	return b
}

type teeWriter struct {
	mu  sync.Mutex
	w   io.Writer
	buf bytes.Buffer
}

func (t *teeWriter) Write(p []byte) (int, error) {
	t.mu.Lock()
	t.buf.Write(p)
	t.mu.Unlock()
	return t.w.Write(p)
}

// A typed Harn client (gen/harn's VM side) talks to examples/host through
// trace. What the host received and wrote (copied by tee on the far side
// of trace) is byte for byte what the client wrote and read, the JSONL
// replays into exactly those bytes, every reply is paired with its request
// with a latency, and the store holds the same records.
func TestTraceHostConversationIsByteIdentical(t *testing.T) {
	dir := t.TempDir()
	inCopy, outCopy, db := filepath.Join(dir, "host.in"), filepath.Join(dir, "host.out"), filepath.Join(dir, "s.db")
	script := fmt.Sprintf(`tee %q | %q -config %q -policy %q -workspace %q | tee %q`, inCopy, bins.host,
		filepath.Join(bins.hostDir, "example/host.json"), filepath.Join(bins.hostDir, "example/policy.json"), dir, outCopy)
	tr := startTrace(t, []string{"--store", db}, "sh", "-c", script)

	sent := &teeWriter{w: tr.stdin}
	var got bytes.Buffer
	conn := harn.NewConn(io.TeeReader(tr.stdout, &got), sent, nil, nil)
	host := harn.NewHostPeer(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := host.HostCapabilities(ctx, &harn.HostCapabilitiesParams{}); err != nil {
		t.Fatalf("host/capabilities: %v; stderr:\n%s", err, tr.stderr.String())
	}
	if _, err := host.HostToolsList(ctx, &harn.NoArgs{}); err != nil {
		t.Fatalf("host/tools/list: %v", err)
	}
	if _, err := host.ProcessListShells(ctx, &harn.HostCallParams{}, &harn.NoArgs{}); err != nil {
		t.Logf("process.list_shells: %v (an error reply is traffic too)", err)
	}
	if _, err := host.HostCapabilities(ctx, &harn.HostCapabilitiesParams{}); err != nil {
		t.Fatal(err)
	}
	tr.stdin.Close()
	if status := tr.wait(t); status != 0 {
		t.Fatalf("status %d; stderr:\n%s", status, tr.stderr.String())
	}
	conn.Close()

	hostIn, _ := os.ReadFile(inCopy)
	hostOut, _ := os.ReadFile(outCopy)
	sent.mu.Lock()
	clientOut := sent.buf.Bytes()
	sent.mu.Unlock()
	if len(clientOut) == 0 || !bytes.Equal(hostIn, clientOut) {
		t.Fatalf("the host received\n%q\nthe client sent\n%q", hostIn, clientOut)
	}
	if len(hostOut) == 0 || !bytes.Equal(got.Bytes(), hostOut) {
		t.Fatalf("the client read\n%q\nthe host wrote\n%q", got.Bytes(), hostOut)
	}
	recs := tr.records(t)
	if r := replay(recs, frames.In); !bytes.Equal(r, clientOut) {
		t.Fatalf("JSONL in-direction replays into\n%q\nnot\n%q", r, clientOut)
	}
	if r := replay(recs, frames.Out); !bytes.Equal(r, hostOut) {
		t.Fatalf("JSONL out-direction replays into\n%q\nnot\n%q", r, hostOut)
	}
	var requests, replies int
	for _, r := range recs {
		if r.Type != tracelog.TypeFrame {
			continue
		}
		if r.Family != frames.Harn {
			t.Errorf("frame %d: family %q, want harn", r.Seq, r.Family)
		}
		switch r.Kind {
		case frames.Request:
			requests++
		case frames.Response, frames.Error:
			replies++
			if r.ReplyTo == 0 || r.LatencyUS == nil || *r.LatencyUS <= 0 || r.Method == "" {
				t.Errorf("reply %d not paired: %+v", r.Seq, r)
			}
		}
	}
	if requests != 4 || replies != 4 {
		t.Errorf("%d requests, %d replies", requests, replies)
	}
	end := recs[len(recs)-1]
	if end.Type != tracelog.TypeEnd || *end.Status != 0 || len(end.Unanswered) != 0 {
		t.Errorf("end record %+v", end)
	}

	st, err := store.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ss, err := st.Sessions(ctx)
	if err != nil || len(ss) != 1 || ss[0].ID != recs[0].Session || ss[0].Frames != 8 || ss[0].Family != "harn" || *ss[0].Status != 0 {
		t.Fatalf("store sessions %+v, %v", ss, err)
	}
	stored, err := st.Records(ctx, ss[0].ID, 0, 0)
	if err != nil || len(stored) != len(recs)-1 { // after seq 0, the session record
		t.Fatalf("store has %d records after the session record, the file %d: %v", len(stored), len(recs)-1, err)
	}
	for i, r := range stored {
		a, _ := r.Marshal(nil)
		b, _ := recs[i+1].Marshal(nil)
		if !bytes.Equal(a, b) {
			t.Errorf("record %d differs:\n%s%s", i+1, a, b)
		}
	}
}

// SIGINT, SIGTERM and SIGHUP reach the child's process group; trace exits
// with the child's status, 128+n when the signal ended it.
func TestTraceForwardsSignalsAndStatus(t *testing.T) {
	for _, c := range []struct {
		name   string
		sig    syscall.Signal
		script string
		want   int
	}{
		{"SIGTERM trapped", syscall.SIGTERM, `trap 'exit 3' TERM; echo ready; while :; do sleep 0.05; done`, 3},
		{"SIGINT kills", syscall.SIGINT, `echo ready; exec sleep 60`, 130},
		{"SIGHUP kills", syscall.SIGHUP, `echo ready; exec sleep 60`, 129},
	} {
		t.Run(c.name, func(t *testing.T) {
			tr := startTrace(t, nil, "sh", "-c", c.script)
			line, err := bufio.NewReader(tr.stdout).ReadString('\n')
			if err != nil || line != "ready\n" {
				t.Fatalf("%q %v", line, err)
			}
			if err := tr.cmd.Process.Signal(c.sig); err != nil {
				t.Fatal(err)
			}
			if status := tr.wait(t); status != c.want {
				t.Fatalf("status %d, want %d; stderr:\n%s", status, c.want, tr.stderr.String())
			}
			recs := tr.records(t)
			if end := recs[len(recs)-1]; end.Type != tracelog.TypeEnd || *end.Status != c.want {
				t.Fatalf("end record %+v", end)
			}
		})
	}
}

func TestTraceExitStatusPassesThrough(t *testing.T) {
	tr := startTrace(t, nil, "sh", "-c", "exit 42")
	tr.stdin.Close()
	if status := tr.wait(t); status != 42 {
		t.Fatalf("status %d", status)
	}
}

// A 1 MiB line passes unchanged; recorded with a smaller cap it is kept
// truncated, with its whole length.
func TestTraceLongLine(t *testing.T) {
	for _, maxRecord := range []int{1 << 20, 64 << 10} {
		t.Run(fmt.Sprint(maxRecord), func(t *testing.T) {
			tr := startTrace(t, []string{"--max-record", fmt.Sprint(maxRecord)}, "cat")
			line := append([]byte(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","pad":"`),
				bytes.Repeat([]byte("x"), 1<<20)...)
			line = append(line[:1<<20-3], `"}}`...)
			msg := append(line, '\n')
			go func() { tr.stdin.Write(msg); tr.stdin.Close() }()
			got, err := io.ReadAll(tr.stdout)
			if err != nil || !bytes.Equal(got, msg) {
				t.Fatalf("read %d bytes (%v), want the %d sent", len(got), err, len(msg))
			}
			if status := tr.wait(t); status != 0 {
				t.Fatalf("status %d: %s", status, tr.stderr.String())
			}
			recs := tr.records(t)
			for _, r := range recs {
				if r.Type != tracelog.TypeFrame {
					continue
				}
				wantKind := frames.Notification
				if maxRecord < 1<<20 {
					wantKind = frames.Truncated // the cut comes before the end shows there is no id
				}
				if r.Size != 1<<20 || r.Truncated != (maxRecord < 1<<20) || len(r.Line()) != min(maxRecord, 1<<20) || r.Kind != wantKind || r.Method != "session/update" {
					t.Errorf("%s frame: size %d, truncated %v, %d bytes kept, kind %s, method %q", r.Dir, r.Size, r.Truncated, len(r.Line()), r.Kind, r.Method)
				}
			}
		})
	}
}

// The child dies of SIGKILL with a request pending: trace exits with its
// status at once (the peer still holds trace's stdin open) and records the
// request as never answered.
func TestTraceChildKilled(t *testing.T) {
	tr := startTrace(t, nil, "sh", "-c", `read line; kill -9 $$`)
	if _, err := io.WriteString(tr.stdin, `{"jsonrpc":"2.0","id":"q1","method":"session/prompt","params":{"sessionId":"s","prompt":[]}}`+"\n"); err != nil {
		t.Fatal(err)
	}
	if status := tr.wait(t); status != 137 {
		t.Fatalf("status %d; stderr:\n%s", status, tr.stderr.String())
	}
	recs := tr.records(t)
	end := recs[len(recs)-1]
	if end.Type != tracelog.TypeEnd || *end.Status != 137 || end.Signal != "killed" {
		t.Fatalf("end %+v", end)
	}
	if len(end.Unanswered) != 1 || end.Unanswered[0].ID != `"q1"` || end.Unanswered[0].Method != "session/prompt" ||
		len(end.Problems) != 1 || end.Problems[0].Code != frames.ProblemUnanswered {
		t.Fatalf("unanswered %+v, problems %+v", end.Unanswered, end.Problems)
	}
}

// trace holds no more than a chunk of a stream its child does not read:
// the writer blocks, as it would on the child's own pipe.
func TestTraceKeepsBackpressure(t *testing.T) {
	tr := startTrace(t, nil, "sleep", "30")
	// trace handles SIGTERM once it is running: its session record, written
	// after, says so (on a loaded machine starting takes more than the
	// half second below, and a SIGTERM before would kill trace itself).
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if b, _ := os.ReadFile(tr.out); bytes.Contains(b, []byte(`"type":"session"`)) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("trace never wrote its session record")
		}
	}
	var written int64
	var mu sync.Mutex
	go func() {
		chunk := bytes.Repeat([]byte("y"), 4096)
		for {
			n, err := tr.stdin.Write(chunk)
			mu.Lock()
			written += int64(n)
			mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	time.Sleep(500 * time.Millisecond)
	mu.Lock()
	w := written
	mu.Unlock()
	// Two pipes (64 KiB each) and one 64 KiB read buffer, with slack.
	if w > 512<<10 {
		t.Fatalf("%d bytes accepted by a child that reads nothing", w)
	}
	tr.cmd.Process.Signal(syscall.SIGTERM)
	if status := tr.wait(t); status != 128+int(syscall.SIGTERM) {
		t.Fatalf("status %d", status)
	}
}

func TestTraceUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"trace"},
		{"trace", "--ui", "0.0.0.0:0", "--", "true"},
		{"trace", "--protocol", "mcp", "--", "true"},
		{"trace", "--out", "-", "--", "true"},
		{"trace", "--nope", "--", "true"},
	} {
		if status, _, stderr := runCmd(t, "", args...); status != 2 {
			t.Errorf("%v: status %d, %s", args, status, stderr)
		}
	}
	if status, _, stderr := runCmd(t, "", "trace", "--", "/nonexistent/command"); status != 1 || !strings.Contains(stderr, "nonexistent") {
		t.Errorf("missing command: status %d, %s", status, stderr)
	}
}

// In-process, with --pretty: the transcript names methods and problems,
// and secrets are masked in it and in the record but forwarded intact.
func TestTracePrettyAndRedaction(t *testing.T) {
	out := filepath.Join(t.TempDir(), "t.jsonl")
	in := `{"jsonrpc":"2.0","id":1,"method":"authenticate","params":{"methodId":"k","apiKey":"sk-live-abcdefghijklmnop"}}` + "\n" +
		`{"jsonrpc":"2.0","id":2,"method":"session/new","params":{}}` + "\n"
	status, stdout, stderr := runCmd(t, in, "trace", "--pretty", "--out", out, "--", "cat")
	if status != 0 || stdout != in {
		t.Fatalf("status %d, forwarded %q", status, stdout)
	}
	if strings.Contains(stderr, "abcdefghijklmnop") || !strings.Contains(stderr, "authenticate") || !strings.Contains(stderr, "schema at /params/cwd") ||
		!strings.Contains(stderr, "never answered") || strings.Contains(stderr, "\x1b[") {
		t.Fatalf("transcript:\n%s", stderr)
	}
	data, _ := os.ReadFile(out)
	if bytes.Contains(data, []byte("abcdefghijklmnop")) || !bytes.Contains(data, []byte(`"redacted":true`)) {
		t.Fatalf("record:\n%s", data)
	}
}

// watchWriter collects what is written and closes seen once it holds want.
type watchWriter struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	want string
	seen chan struct{}
	once sync.Once
}

func (w *watchWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if strings.Contains(w.buf.String(), w.want) {
		w.once.Do(func() { close(w.seen) })
	}
	return len(p), nil
}

// traceWithStderr traces a command that writes on its stderr between
// frames: "warming up" after initialize (and before the session/cancel
// that follows it: the test sends that only once the line has come
// through), then a reply, a line with a secret, and a last line without
// a newline. It returns the trace file and what passed through stderr.
func traceWithStderr(t *testing.T) (string, string) {
	t.Helper()
	t.Setenv("BRIDGEKIT_TEST_TOKEN", "tok-0123456789abcdef")
	out := filepath.Join(t.TempDir(), "t.jsonl")
	script := `read a; echo "warming up" >&2; read b; echo '{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1}}'; echo "using $BRIDGEKIT_TEST_TOKEN" >&2; printf 'no newline' >&2; read c; exit 0`
	inR, inW := io.Pipe()
	errs := &watchWriter{want: "warming up\n", seen: make(chan struct{})}
	var stdout bytes.Buffer
	env := &Env{Stdin: inR, Stdout: &stdout, Stderr: errs}
	done := make(chan int, 1)
	go func() {
		done <- run(context.Background(), env, []string{"trace", "--out", out, "--", "sh", "-c", script})
	}()
	io.WriteString(inW, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`+"\n")
	select {
	case <-errs.seen:
	case <-time.After(30 * time.Second):
		t.Fatal("the command's stderr never came through")
	}
	io.WriteString(inW, `{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}}`+"\n")
	inW.Close()
	status := <-done
	errs.mu.Lock()
	defer errs.mu.Unlock()
	if status != 0 {
		t.Fatalf("status %d; stderr:\n%s", status, errs.buf.String())
	}
	return out, errs.buf.String()
}

// The command's stderr passes through and is recorded, a line a stderr
// record numbered with the frames in the order they came, masked as
// frames are; a last line without a newline is recorded partial.
func TestTraceRecordsStderr(t *testing.T) {
	out, passed := traceWithStderr(t)
	if !strings.Contains(passed, "warming up\nusing tok-0123456789abcdef\nno newline") {
		t.Errorf("stderr passed through: %q", passed)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := tracelog.ReadAll(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	stderr := map[string]*tracelog.Record{}
	for i, r := range recs {
		if r.Seq != int64(i) {
			t.Errorf("record %d has seq %d", i, r.Seq)
		}
		switch r.Type {
		case tracelog.TypeFrame:
			order = append(order, r.Method)
		case tracelog.TypeStderr:
			order = append(order, "stderr:"+string(r.Line()))
			stderr[string(r.Line())] = r
		}
	}
	got := strings.Join(order, "|")
	if !strings.HasPrefix(got, "initialize|stderr:warming up|session/cancel|") || len(order) != 6 {
		t.Errorf("records in order: %s", got)
	}
	if r := stderr["using [REDACTED]"]; r == nil || !r.Redacted || bytes.Contains(data, []byte("0123456789abcdef")) {
		t.Errorf("the token was recorded: %s", data)
	}
	if r := stderr["no newline"]; r == nil || !r.Partial {
		t.Errorf("the last line: %+v", r)
	}
}
