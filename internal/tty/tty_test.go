package tty

import (
	"bytes"
	"os"
	"testing"
)

func TestNotTerminals(t *testing.T) {
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	f, err := os.CreateTemp(t.TempDir(), "out")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for name, out := range map[string]any{"/dev/null": null, "a pipe": w, "a file": f, "a buffer": &bytes.Buffer{}} {
		if Is(out.(interface{ Write([]byte) (int, error) })) {
			t.Errorf("%s is taken for a terminal", name)
		}
	}
}
