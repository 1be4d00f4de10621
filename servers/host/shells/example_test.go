package shells_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/bridgekit/bridgekit/gen/harn"
	"github.com/bridgekit/bridgekit/servers/host/shells"
)

// mac is a Platform describing a Mac whose user runs Homebrew's fish.
type mac struct{}

func (mac) GOOS() string { return "darwin" }
func (mac) LookupEnv(k string) (string, bool) {
	if k == "SHELL" {
		return "/opt/homebrew/bin/fish", true
	}
	return "", false
}
func (mac) IsExecutable(string) bool              { return true }
func (mac) LoginShell() (string, error)           { return "/bin/zsh", nil }
func (mac) LookPath(string) (string, error)       { return "", errors.New("not found") }
func (mac) EvalSymlinks(p string) (string, error) { return p, nil }
func (mac) ReadFile(string) ([]byte, error) {
	return []byte("# List of acceptable shells\n/bin/bash\n/bin/zsh\n/bin/sh\n"), nil
}

func Example() {
	// shells.New(shells.Config{}) describes the real machine; this example
	// describes an imaginary Mac instead, so its output is fixed.
	p, err := shells.New(shells.Config{Platform: mac{}})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	list, _ := p.ProcessListShells(ctx, nil, &harn.NoArgs{})
	for _, s := range list.Shells {
		fmt.Println(s.ID, s.Path, s.Source, s.LoginArgs)
	}
	fmt.Println("default:", *list.DefaultShellID)

	session := "session-1"
	call := &harn.HostCallParams{Name: "process.shell_invocation", SessionID: &session}
	p.ProcessSetDefaultShell(ctx, call, &harn.SetDefaultShellRequest{ShellID: "zsh"})
	command, login := `echo "$HOME" > 'out file'`, true
	inv, _ := p.ProcessShellInvocation(ctx, call, &harn.ShellInvocationRequest{Command: &command, Login: &login})
	fmt.Printf("%s %q command at %d\n", inv.Program, inv.Args, inv.CommandArgIndex)

	_, err = p.ProcessShellInvocation(ctx, call, &harn.ShellInvocationRequest{ShellID: new("tcsh"), Command: &command})
	fmt.Println(errors.Is(err, shells.ErrUnknownShell), err)
	// Output:
	// fish /opt/homebrew/bin/fish env [-l -c]
	// zsh /bin/zsh login [-l -c]
	// bash /bin/bash etc_shells [-l -c]
	// sh /bin/sh etc_shells [-l -c]
	// default: fish
	// /bin/zsh ["-l" "-c" "echo \"$HOME\" > 'out file'"] command at 2
	// true unknown shell "tcsh"
}
