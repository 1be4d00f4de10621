package host_test

import (
	"context"
	"fmt"
	"io"

	"github.com/bridgekit/bridgekit/clients/harnvm"
	"github.com/bridgekit/bridgekit/gen/harn"
	"github.com/bridgekit/bridgekit/servers/host"
)

// listShells serves one operation, process.list_shells, from a fixed list.
func listShells(ctx context.Context, call *harn.HostCallParams, _ *harn.NoArgs) (*harn.ListShellsResponse, error) {
	sh := harn.Shell{ID: "sh", Label: "sh", Path: "/bin/sh", Platform: "linux", Available: true,
		DefaultArgs: []string{"-c"}, LoginArgs: []string{}, Source: harn.ShellSourceConfigured}
	return &harn.ListShellsResponse{Shells: []harn.Shell{sh}, DefaultShellID: &sh.ID}, nil
}

// A host is a harn.HostHandlers with the fields of what it serves set;
// operations left unset are answered -32601 and are not advertised by
// host/capabilities. Serve speaks the bridge over any reader and writer
// (os.Stdin and os.Stdout in a real host). Here a typed VM-side client
// stands in for the Harn runtime.
func Example() {
	ctx := context.Background()
	hostIn, vmOut := io.Pipe()
	vmIn, hostOut := io.Pipe()
	go host.New(&harn.HostHandlers{ProcessListShells: listShells}, nil).Serve(ctx, hostIn, hostOut)

	vm := harnvm.New(vmIn, vmOut, nil, nil)
	defer vm.Close()
	caps, _ := vm.HostCapabilities(ctx, nil)
	fmt.Println("process:", harnvm.Operations(caps["process"]))
	list, _ := vm.ProcessListShells(ctx, nil, nil)
	fmt.Println("default:", *list.DefaultShellID, list.Shells[0].Path)
	_, err := vm.ProcessGetDefaultShell(ctx, nil, nil)
	fmt.Println("error:", err)
	// Output:
	// process: [list_shells]
	// default: sh /bin/sh
	// error: rpc error -32601: host/call: unsupported operation process.get_default_shell
}
