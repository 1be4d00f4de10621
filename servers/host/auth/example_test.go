package auth_test

import (
	"fmt"

	"github.com/go-json-experiment/json"

	"github.com/bridgekit/bridgekit/gen/acp"
	"github.com/bridgekit/bridgekit/servers/host/auth"
)

// codex-acp offers a ChatGPT login and two env_var methods; with
// OPENAI_API_KEY set, the client authenticates with openai-api-key.
func ExampleChoose() {
	var init acp.InitializeResponse
	_ = json.Unmarshal([]byte(`{"protocolVersion":1,"authMethods":[
		{"id":"chatgpt","name":"Login with ChatGPT"},
		{"type":"env_var","id":"codex-api-key","name":"Use CODEX_API_KEY","vars":[{"name":"CODEX_API_KEY"}]},
		{"type":"env_var","id":"openai-api-key","name":"Use OPENAI_API_KEY","vars":[{"name":"OPENAI_API_KEY"}]}]}`), &init)
	methods := auth.Methods(&init)
	environment := map[string]string{"OPENAI_API_KEY": "sk-..."}
	lookup := func(k string) (string, bool) { v, ok := environment[k]; return v, ok }

	plan, _ := auth.Choose(methods, auth.Options{LookupEnv: lookup})
	fmt.Println(plan.Action == auth.Authenticate, plan.Method.ID)
	// The client then calls authenticate {methodId: "openai-api-key"}.

	_, err := auth.Choose(methods, auth.Options{Method: "codex-api-key", LookupEnv: lookup})
	fmt.Println(err)
	// Output:
	// true openai-api-key
	// authentication method "codex-api-key" needs CODEX_API_KEY, which is not set; the agent's methods:
	//   chatgpt (agent): the agent's own login, through authenticate [Login with ChatGPT]
	//   codex-api-key (env_var): set CODEX_API_KEY [Use CODEX_API_KEY]
	//   openai-api-key (env_var): set OPENAI_API_KEY [Use OPENAI_API_KEY]
}
