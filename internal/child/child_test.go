package child

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/bridgekit/bridgekit/runtime/redact"
)

func TestTail(t *testing.T) {
	for _, c := range []struct {
		name   string
		max    int
		writes []string
		want   string
	}{
		{"fits", 10, []string{"ab", "cd"}, "abcd"},
		{"exactly", 4, []string{"abcd"}, "abcd"},
		{"trimmed", 10, []string{"  boom\n"}, "boom"},
		{"one long write", 6, []string{"abc defgh"}, "…defgh"},
		{"one long word", 4, []string{"abcdefgh"}, ""},
		{"a full write after another", 6, []string{"x", "ab cd\n"}, "…cd"},
		{"front dropped", 7, []string{"abc", "d efg"}, "…efg"},
		{"a cut rune", 5, []string{"aé", " bcd"}, "…bcd"},
		{"a whole rune", 6, []string{"aé", " bcd"}, "…bcd"},
		{"a cut secret", 12, []string{"key=sk-live-0123456789 then boom"}, "…then boom"},
		{"invalid bytes", 8, []string{"a\xffb"}, "a\uFFFDb"},
		{"nothing kept", 0, []string{"abc"}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			var tee bytes.Buffer
			tl := &Tail{Max: c.max, Tee: &tee}
			for _, w := range c.writes {
				if n, err := tl.Write([]byte(w)); n != len(w) || err != nil {
					t.Fatalf("Write(%q) = %d, %v", w, n, err)
				}
			}
			if got := tl.String(); got != c.want {
				t.Errorf("String() = %q, want %q", got, c.want)
			}
			if tee.String() != strings.Join(c.writes, "") {
				t.Errorf("tee got %q", tee.String())
			}
		})
	}
}

type failing struct{}

func (failing) Write([]byte) (int, error) { return 0, errors.New("full") }

func TestTailIgnoresTeeErrors(t *testing.T) {
	tl := &Tail{Max: 8, Tee: failing{}}
	if n, err := tl.Write([]byte("oops")); n != 4 || err != nil || tl.String() != "oops" {
		t.Fatalf("Write = %d, %v; kept %q", n, err, tl.String())
	}
}

// What the child writes just before it exits is still read after Wait.
func TestStartKeepsTheLastWords(t *testing.T) {
	cmd := exec.Command("sh", "-c", "read line; echo \"got $line\"; echo last")
	stdin, stdout, err := Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	defer stdout.Close()
	if _, err := io.WriteString(stdin, "hello\n"); err != nil {
		t.Fatal(err)
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(stdout)
	if err != nil || string(out) != "got hello\nlast\n" {
		t.Fatalf("read %q, %v", out, err)
	}
}

func TestStartFailureClosesEverything(t *testing.T) {
	cmd := exec.Command("/nonexistent/program")
	if _, _, err := Start(cmd); err == nil {
		t.Fatal("started a program that does not exist")
	}
	if err := cmd.Stdin.(interface{ Close() error }).Close(); err == nil {
		t.Error("the child's stdin was left open")
	}
}

// What the Tail quotes has the values passed to the child and token
// shapes masked.
func TestTailMasksSecrets(t *testing.T) {
	t.Setenv("BRIDGEKIT_TEST_PASSED", "passed-value-123")
	r := Redactor([]string{"MY_API_KEY=key-value-456", "PLAIN=plain-value-789"}, []string{"BRIDGEKIT_TEST_PASSED"}, []string{"X=set-value-000"})
	tl := &Tail{Max: 1 << 10, Redact: r}
	fmt.Fprintf(tl, "boom: passed-value-123 key-value-456 set-value-000 sk-abcdefghijklmnopqrstu plain-value-789\n")
	got := tl.String()
	for _, secret := range []string{"passed-value-123", "key-value-456", "set-value-000", "sk-abcdefghijklmnopqrstu"} {
		if strings.Contains(got, secret) {
			t.Errorf("%q leaks %q", got, secret)
		}
	}
	if !strings.Contains(got, "plain-value-789") {
		t.Errorf("%q masked a value that is no secret", got)
	}
}

// Environ passes BaselineEnv and the names asked for, nothing else.
func TestEnviron(t *testing.T) {
	t.Setenv("DATABASE_URL", "postgres://u:p@h/db")
	t.Setenv("BRIDGEKIT_TEST_WANTED", "yes")
	t.Setenv("PATH", "/bin")
	env := Environ([]string{"BRIDGEKIT_TEST_WANTED", "BRIDGEKIT_TEST_UNSET", "PATH"}, []string{"A=b"})
	want := []string{"PATH=/bin", "BRIDGEKIT_TEST_WANTED=yes", "A=b"}
	got := slices.DeleteFunc(slices.Clone(env), func(kv string) bool {
		name, _, _ := strings.Cut(kv, "=")
		return slices.Contains(BaselineEnv, name) && name != "PATH"
	})
	if !slices.Equal(got, want) {
		t.Errorf("Environ = %q, want %q", env, want)
	}
}

func TestLoggerMasks(t *testing.T) {
	var buf bytes.Buffer
	l := Logger(slog.New(slog.NewTextHandler(&buf, nil)), redact.New("hunter2-secret"))
	l.With("pre", "a hunter2-secret").Warn("bad frame hunter2-secret", "line", `{"x":"hunter2-secret"}`, "err", errors.New("boom hunter2-secret"),
		slog.Group("g", "v", "hunter2-secret"), "n", 3)
	if strings.Contains(buf.String(), "hunter2") || !strings.Contains(buf.String(), "n=3") {
		t.Errorf("logged %s", buf.String())
	}
	if Logger(nil, nil) != nil {
		t.Error("Logger(nil) is not nil")
	}
}

func TestMaskError(t *testing.T) {
	base := errors.New("boom")
	err := MaskError(redact.New("hunter2-secret"), fmt.Errorf("call: %w: hunter2-secret", base))
	if strings.Contains(err.Error(), "hunter2") || !errors.Is(err, base) {
		t.Errorf("%v", err)
	}
	if MaskError(nil, base) != base || MaskError(nil, nil) != nil {
		t.Error("changed an error with nothing to mask")
	}
}
