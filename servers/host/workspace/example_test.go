package workspace_test

import (
	"errors"
	"fmt"
	"os"
	"path"

	"github.com/bridgekit/bridgekit/servers/host/workspace"
)

func Example() {
	dir, _ := os.MkdirTemp("", "ws")
	defer os.RemoveAll(dir)
	w, err := workspace.Open(dir, &workspace.Limits{MaxReadBytes: 1 << 20})
	if err != nil {
		panic(err)
	}
	defer w.Close()

	// A policy that lets the agent write under src/ only, decided on the
	// path the kernel reached.
	onlySrc := func(rel string) error {
		if ok, _ := path.Match("src/*", rel); !ok {
			return errors.New("not under src/")
		}
		return nil
	}
	fmt.Println(w.WriteFile("src/a.txt", []byte("one\ntwo\n"), onlySrc))
	fmt.Println(w.WriteFile("b.txt", []byte("x"), onlySrc))
	text, err := w.ReadText("src/a.txt", workspace.ReadRange{Line: 2}, nil)
	fmt.Printf("%q %v\n", text, err)
	_, err = w.ReadText("../etc/passwd", workspace.ReadRange{}, nil)
	fmt.Println(errors.Is(err, workspace.ErrOutside))
	// Output:
	// <nil>
	// not under src/
	// "two\n" <nil>
	// true
}
