package child

import (
	"bytes"
	"errors"
	"io"
	"os/exec"
	"strings"
	"testing"
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
		{"one long write", 4, []string{"abcdefgh"}, "…efgh"},
		{"a full write after another", 4, []string{"x", "abcd"}, "…abcd"},
		{"front dropped", 5, []string{"abc", "def"}, "…bcdef"},
		{"a cut rune", 4, []string{"aé", "bcd"}, "…bcd"},
		{"a whole rune", 5, []string{"aé", "bcd"}, "…ébcd"},
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
