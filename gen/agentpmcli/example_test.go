package agentpmcli_test

import (
	"errors"
	"fmt"

	"github.com/bridgekit/bridgekit/gen/agentpmcli"
)

// Reading what agentpm run --machine wrote on stdout: the tool's output, or
// a typed error by category.
func ExampleParseRunOutput() {
	for _, stdout := range []string{
		`{"schema_version":1,"status":"success","tool":{"package":"@zack/echo-json","version":"0.1.0"},"output":{"message":"hello"}}`,
		`{"schema_version":1,"status":"error","error":{"category":"timeout","message":"tool execution timed out"}}`,
	} {
		r, err := agentpmcli.ParseRunOutput([]byte(stdout))
		if err != nil {
			fmt.Println(err)
			continue
		}
		out, err := r.Output()
		var re *agentpmcli.RunError
		switch {
		case errors.As(err, &re):
			fmt.Println("failed:", re.Category, errors.Is(err, agentpmcli.ErrTimeout), "retryable:", re.Retryable())
		case err == nil:
			fmt.Println("output:", string(out))
		}
	}
	// Output:
	// output: {"message":"hello"}
	// failed: timeout true retryable: true
}
