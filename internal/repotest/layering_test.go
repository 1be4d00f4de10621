package repotest

import (
	"fmt"
	"os/exec"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/bridgekit/bridgekit/"

// layer is a package's place in docs/architecture.md's layers: runtime 0,
// gen 1, servers and clients 2, examples 3; internal/ (shared helpers of
// the upper layers) is "support". ok is false outside bridgekit.
func layer(pkg string) (name string, rank int, ok bool) {
	rel, found := strings.CutPrefix(pkg, module)
	if !found {
		return "", 0, false
	}
	top, _, _ := strings.Cut(rel, "/")
	switch top {
	case "runtime":
		return top, 0, true
	case "gen":
		return top, 1, true
	case "internal":
		return top, -1, true
	case "servers", "clients":
		return top, 2, true
	case "examples", "cmd":
		return top, 3, true
	}
	return top, 0, false
}

// violations lists the imports of graph (package -> its imports) that run
// the wrong way: a package imports only its own layer or lower ones;
// runtime and gen import no internal/ package but runtime/internal; an
// internal/ package imports no servers, clients or examples; and nothing
// imports an example but the example itself.
//
// Tests may use internal/ test helpers (internal/schematest) from any
// layer: with tests set, the internal/ rules are not applied.
func violations(graph map[string][]string, tests bool) []string {
	var out []string
	for pkg, imports := range graph {
		from, fromRank, ok := layer(pkg)
		if !ok {
			continue
		}
		for _, imp := range imports {
			to, toRank, ok := layer(imp)
			if !ok {
				continue
			}
			bad := ""
			switch {
			case to == "examples" || to == "cmd":
				if !sameExample(pkg, imp) {
					bad = "nothing imports examples/ (they hold no reusable code)"
				}
			case tests && (to == "internal" || from == "internal"):
			case to == "internal" && (from == "runtime" || from == "gen"):
				if !strings.HasPrefix(imp, module+"runtime/internal/") || from != "runtime" {
					bad = from + " imports no internal/ package"
				}
			case from == "internal" && toRank >= 2:
				bad = "internal/ imports no servers, clients or examples"
			case from != "internal" && to != "internal" && toRank > fromRank:
				bad = fmt.Sprintf("%s (layer %d) imports %s (layer %d)", from, fromRank, to, toRank)
			}
			if bad != "" {
				out = append(out, fmt.Sprintf("%s imports %s: %s", strings.TrimPrefix(pkg, module), strings.TrimPrefix(imp, module), bad))
			}
		}
	}
	sort.Strings(out)
	return out
}

// sameExample reports whether a and b are in the same example (or the
// same examples/providers module, whose providers share its internal/).
func sameExample(a, b string) bool {
	top := func(p string) string {
		parts := strings.SplitN(strings.TrimPrefix(p, module), "/", 3)
		if len(parts) < 2 {
			return p
		}
		return parts[0] + "/" + parts[1]
	}
	return top(a) == top(b)
}

// imports is the import graph of the module in dir, by the go list
// template format (the imports, or the tests' imports).
func imports(t *testing.T, dir, format string) map[string][]string {
	t.Helper()
	cmd := exec.Command("go", "list", "-f", "{{.ImportPath}} "+format, "./...")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list in %s: %v", dir, err)
	}
	graph := map[string][]string{}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(l)
		if len(f) > 0 {
			graph[f[0]] = f[1:]
		}
	}
	return graph
}

// Imports run one way between the layers, in every module of the
// repository.
func TestLayering(t *testing.T) {
	root := repoRoot(t)
	for _, dir := range []string{".", "examples/providers", "cmd/bridgekit"} {
		graph := imports(t, root+"/"+dir, `{{join .Imports " "}}`)
		if len(graph) == 0 {
			t.Fatalf("no packages in %s", dir)
		}
		for _, v := range violations(graph, false) {
			t.Errorf("%s: %s", dir, v)
		}
		for _, v := range violations(imports(t, root+"/"+dir, `{{join .TestImports " "}} {{join .XTestImports " "}}`), true) {
			t.Errorf("%s (tests): %s", dir, v)
		}
	}
}

// The rule catches an import of each wrong kind, and allows the right ones.
func TestLayeringCatchesWrongWay(t *testing.T) {
	p := func(s string) string { return module + s }
	graph := map[string][]string{
		p("runtime/rpc"):          {p("gen/acp"), p("runtime/ndjson"), p("runtime/internal/jsonscan"), "fmt"},
		p("runtime/wire"):         {p("internal/child")},
		p("gen/acp"):              {p("runtime/rpc"), p("servers/host"), p("internal/serve")},
		p("servers/host"):         {p("gen/harn"), p("clients/harnvm"), p("internal/child"), p("examples/host")},
		p("internal/serve"):       {p("runtime/rpc"), p("clients/acpcmd")},
		p("examples/host"):        {p("servers/host"), p("internal/lossy")},
		p("examples/providers/x"): {p("examples/providers/internal/y"), p("examples/host")},
	}
	want := []string{
		"examples/providers/x imports examples/host: nothing imports examples/ (they hold no reusable code)",
		"gen/acp imports internal/serve: gen imports no internal/ package",
		"gen/acp imports servers/host: gen (layer 1) imports servers (layer 2)",
		"internal/serve imports clients/acpcmd: internal/ imports no servers, clients or examples",
		"runtime/rpc imports gen/acp: runtime (layer 0) imports gen (layer 1)",
		"runtime/wire imports internal/child: runtime imports no internal/ package",
		"servers/host imports examples/host: nothing imports examples/ (they hold no reusable code)",
	}
	if got := violations(graph, false); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("violations:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// A test may use an internal/ helper, never an example.
	tests := map[string][]string{p("gen/acp"): {p("internal/schematest"), p("examples/host")}}
	if got := violations(tests, true); len(got) != 1 || !strings.Contains(got[0], "nothing imports examples/") {
		t.Fatalf("test imports: %q", got)
	}
}
