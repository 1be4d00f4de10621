package conform

import (
	"encoding/json"
	"testing"

	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/frames"
)

// families maps a generated package to the classifier's family, for the
// operations' generated argument types.
var opFamilies = map[string]frames.Family{
	"harn": frames.Harn, "agentpmmachine": frames.AgentPMMachine,
}

// Every operation of every catalogue gets arguments its schema accepts
// (operationArgs checks them against the schema) and its generated type
// decodes, the same on every call.
func TestEveryOperationsArgsFitItsSchema(t *testing.T) {
	ops, err := loadOpSchemas()
	if err != nil {
		t.Fatal(err)
	}
	if len(ops.args) < 20 {
		t.Fatalf("only %d operations in the spec", len(ops.args))
	}
	typed := 0
	for k := range ops.args {
		args, err := operationArgs(k.pkg, k.wire, k.goName)
		if err != nil {
			t.Errorf("%s %s %s: %v", k.pkg, k.wire, k.goName, err)
			continue
		}
		a, _ := json.Marshal(args)
		again, _ := operationArgs(k.pkg, k.wire, k.goName)
		if b, _ := json.Marshal(again); string(a) != string(b) {
			t.Errorf("%s: %s, then %s", k.goName, a, b)
		}
		fam, ok := opFamilies[k.pkg]
		if !ok {
			t.Errorf("%s: package %s carries operations; add its family here", k.goName, k.pkg)
			continue
		}
		for _, op := range frames.Operations(fam, k.wire) {
			if op.Info.Go != k.goName {
				continue
			}
			if p, bad := frames.CheckType(fam, op.Args, a, "/args"); bad {
				t.Errorf("%s: the generated type refuses %s: %s: %s", k.goName, a, p.Pointer, p.Message)
			}
			if op.Args != nil {
				typed++
			}
		}
	}
	if typed < 20 {
		t.Errorf("only %d operations' arguments were decoded into their generated types", typed)
	}
}

// The arguments learnt from an earlier result replace the example's, and
// the operation is not run when that result lacks them.
func TestLearntArguments(t *testing.T) {
	var op frames.Operation
	for _, o := range frames.Operations(frames.Harn, "host/call") {
		if o.Info.Match[0] == "process.set_default_shell" {
			op = o
		}
	}
	h := &harnHost{}
	if _, missing, err := h.opArgs(op); err != nil || missing == "" {
		t.Fatalf("no list_shells result: missing %q, %v; want a reason", missing, err)
	}
	var res any
	_ = json.Unmarshal([]byte(`{"shells": [{"id": "fish"}, {"id": "zsh"}], "default_shell_id": "zsh"}`), &res)
	h.results = map[string]any{"process.list_shells": res}
	args, missing, err := h.opArgs(op)
	if err != nil || missing != "" || args["shell_id"] != "fish" {
		t.Fatalf("args %v, missing %q, %v; want shell_id fish", args, missing, err)
	}
}
