package conform

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/bridgekit/bridgekit/generator/codegen"
	"github.com/bridgekit/bridgekit/internal/specschema"
	"github.com/bridgekit/bridgekit/spec"
)

// The arguments conform sends with an operation (host/call's) come from
// the operation's schema in the spec the command was built with
// (spec.FS): specschema's Example, which takes the schema's own examples
// when it has them and builds a value of its required members otherwise.
// So an operation added with `bridgekit scaffold operation` is called with
// arguments its host accepts, with no change to conform.

// opKey names an operation: the generated package, the method that
// carries it, and the operation's Go name.
type opKey struct{ pkg, wire, goName string }

type opSchemas struct {
	spec *specschema.Spec
	args map[opKey]string // the schema location of each operation's arguments
}

var loadOpSchemas = sync.OnceValues(func() (*opSchemas, error) {
	ms, err := codegen.Operations(spec.FS)
	if err != nil {
		return nil, fmt.Errorf("embedded spec: %w", err)
	}
	sp, err := specschema.Load(spec.FS)
	if err != nil {
		return nil, fmt.Errorf("embedded spec: %w", err)
	}
	out := &opSchemas{spec: sp, args: map[opKey]string{}}
	for _, m := range ms {
		for _, op := range m.Operations {
			out.args[opKey{m.Package, m.Wire, op.Go}] = op.Args
		}
	}
	return out, nil
})

// operationArgs returns the arguments to call the operation goName of
// method wire in package pkg with: an example of its arguments' schema
// (an empty object when the catalogue gives no schema).
func operationArgs(pkg, wire, goName string) (map[string]any, error) {
	ops, err := loadOpSchemas()
	if err != nil {
		return nil, err
	}
	loc, ok := ops.args[opKey{pkg, wire, goName}]
	if !ok {
		return nil, fmt.Errorf("%s %s: no operation %s in the embedded spec", pkg, wire, goName)
	}
	if loc == "" {
		return map[string]any{}, nil
	}
	b, err := ops.spec.Example(loc)
	if err != nil {
		return nil, err
	}
	var args map[string]any
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.UseNumber()
	if err := dec.Decode(&args); err != nil {
		return nil, fmt.Errorf("%s: the example of %s is not an object: %s", goName, loc, b)
	}
	return args, nil
}

// A learnt argument is a member of an operation's arguments whose valid
// values only the host knows: conform takes it from the result of an
// operation run before it, which the suite orders first.
type learnt struct {
	op, member string // the operation and its top-level argument member
	from       string // the operation whose result gives the value
	pointer    string // where in that result (a JSON pointer)
}

var learntArgs = []learnt{
	// A shell to select must be one the host listed.
	{op: "process.set_default_shell", member: "shell_id", from: "process.list_shells", pointer: "/shells/0/id"},
}

// at returns the value at a JSON pointer of v (decoded with UseNumber),
// and whether there is one.
func at(v any, pointer string) (any, bool) {
	v, err := specschema.Lookup(v, pointer)
	return v, err == nil
}
