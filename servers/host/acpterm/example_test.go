package acpterm_test

import (
	"fmt"

	"github.com/bridgekit/bridgekit/servers/host/acpterm"
	"github.com/bridgekit/bridgekit/servers/host/terminal"
)

// A command line a shell is to run is allowed word by word only when it
// is plain words; anything with shell syntax needs a wildcard-free pattern
// equal to it.
func ExampleServer_DecideLine() {
	commands, _ := terminal.NewCommands([]string{"go test **", "echo a && echo b"})
	s := &acpterm.Server{Commands: commands}
	for _, line := range []string{"go test ./...", "go test x; rm -rf ~", "echo a && echo b"} {
		ok, reason := s.DecideLine(".", line)
		fmt.Println(ok, reason)
	}
	// Output:
	// true terminal.allow go test **
	// false terminal.allow does not list it; a shell command line with shell syntax (quotes, ;, &, |, $, backticks, redirections, globs, newlines, ...) is allowed only by a pattern without wildcards equal to it
	// true terminal.allow echo a && echo b (exactly)
}
