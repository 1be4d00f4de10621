package files_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/bridgekit/bridgekit/gen/acp"
	"github.com/bridgekit/bridgekit/servers/host/files"
	"github.com/bridgekit/bridgekit/servers/host/workspace"
)

// A workspace whose policy reads docs/ only: a read there is served, one
// elsewhere is refused with -32001 and the reason.
func ExampleServer_ReadTextFile() {
	dir, _ := os.MkdirTemp("", "files")
	defer os.RemoveAll(dir)
	_ = os.MkdirAll(filepath.Join(dir, "docs"), 0o755)
	_ = os.WriteFile(filepath.Join(dir, "docs", "a.md"), []byte("hello\n"), 0o644)
	_ = os.WriteFile(filepath.Join(dir, ".env"), []byte("KEY=x\n"), 0o644)
	ws, err := workspace.Open(dir, nil)
	if err != nil {
		panic(err)
	}
	defer ws.Close()
	s := &files.Server{WS: ws, Allow: func(rel string, write bool) (bool, string) {
		if !write && strings.HasPrefix(rel, "docs/") {
			return true, "docs are readable"
		}
		return false, "only docs/ is readable"
	}}
	res, err := s.ReadTextFile(context.Background(), &acp.ReadTextFileRequest{SessionID: "s", Path: filepath.Join(ws.Dir(), "docs", "a.md")})
	fmt.Printf("%q %v\n", res.Content, err)
	_, err = s.ReadTextFile(context.Background(), &acp.ReadTextFileRequest{SessionID: "s", Path: filepath.Join(ws.Dir(), ".env")})
	fmt.Println(err)
	// Output:
	// "hello\n" <nil>
	// rpc error -32001: read .env denied: only docs/ is readable
}
