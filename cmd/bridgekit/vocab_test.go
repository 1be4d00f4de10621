package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

// flagSets runs every subcommand, and every subcommand of a subcommand,
// with -h, and returns the flag sets they made, by full name ("scaffold
// method"). Subcommands added later are read the same way, with nothing
// to list here.
func flagSets(t *testing.T) map[string]*flag.FlagSet {
	t.Helper()
	sets := map[string]*flag.FlagSet{}
	var names [][]string
	for _, c := range commands {
		names = append(names, []string{c.name})
		for _, sub := range c.subcommands {
			names = append(names, []string{c.name, sub})
		}
	}
	for _, n := range names {
		var out, errb bytes.Buffer
		env := &Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb,
			flagSet: func(name string, fs *flag.FlagSet) { sets[name] = fs }}
		if status := run(context.Background(), env, append(slices.Clone(n), "-h")); status != 0 {
			t.Errorf("bridgekit %s -h: status %d: %s", strings.Join(n, " "), status, errb.String())
		}
		if sets[strings.Join(n, " ")] == nil {
			t.Errorf("bridgekit %s -h made no flag set of that name (newFlags(env, %q, ...))", strings.Join(n, " "), strings.Join(n, " "))
		}
	}
	return sets
}

// flagKind names the kind of a flag's value: bool, string, duration,
// int, or the Go type of a flag.Value of its own.
func flagKind(f *flag.Flag) string {
	if g, ok := f.Value.(flag.Getter); ok {
		switch g.Get().(type) {
		case bool:
			return "bool"
		case string:
			return "string"
		case time.Duration:
			return "duration"
		case int, int64:
			return "int"
		}
	}
	return fmt.Sprintf("%T", f.Value)
}

// TestFlagVocabulary: a flag name means one thing in every subcommand.
// Each flag of every subcommand's flag set is read; a name that two
// subcommands use must be in the vocabulary (vocab.go), and every use of
// a vocabulary name must have its kind and begin its usage text with its
// meaning.
func TestFlagVocabulary(t *testing.T) {
	vocab := map[string]flagMeaning{}
	for _, m := range vocabulary {
		if _, dup := vocab[m.name]; dup {
			t.Errorf("--%s is in the vocabulary twice", m.name)
		}
		vocab[m.name] = m
	}
	used := map[string][]string{} // flag name -> the top-level subcommands using it
	for full, fs := range flagSets(t) {
		top, _, _ := strings.Cut(full, " ")
		fs.VisitAll(func(f *flag.Flag) {
			if !slices.Contains(used[f.Name], top) {
				used[f.Name] = append(used[f.Name], top)
			}
			m, ok := vocab[f.Name]
			if !ok {
				return
			}
			if k := flagKind(f); k != m.kind {
				t.Errorf("bridgekit %s --%s is a %s; the vocabulary's --%s is a %s", full, f.Name, k, f.Name, m.kind)
			}
			if !strings.HasPrefix(f.Usage, m.meaning) {
				t.Errorf("bridgekit %s --%s: %q does not begin with the vocabulary's meaning %q", full, f.Name, f.Usage, m.meaning)
			}
		})
	}
	for name, cmds := range used {
		slices.Sort(cmds)
		if _, ok := vocab[name]; !ok && len(cmds) > 1 {
			t.Errorf("--%s is used by %s: give it one meaning in the vocabulary (vocab.go) and docs/bridgekit/README.md", name, strings.Join(cmds, " and "))
		}
	}
	for _, m := range vocabulary {
		if len(used[m.name]) == 0 {
			t.Errorf("the vocabulary's --%s is used by no subcommand", m.name)
		}
	}
}

// The vocabulary is documented, entry by entry, in the command's README.
func TestFlagVocabularyDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/bridgekit/README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range vocabulary {
		row := fmt.Sprintf("| `--%s` | %s | %s |", m.name, m.kind, m.meaning)
		if !bytes.Contains(doc, []byte(row)) {
			t.Errorf("docs/bridgekit/README.md lacks the row %s", row)
		}
	}
}

// bridgekit help SUB says exactly what bridgekit SUB -h says.
func TestHelpIsDashH(t *testing.T) {
	for _, c := range commands {
		names := [][]string{{c.name}}
		for _, sub := range c.subcommands {
			names = append(names, []string{c.name, sub})
		}
		for _, n := range names {
			hs, hout, herr := runCmd(t, "", append([]string{"help"}, n...)...)
			ds, dout, derr := runCmd(t, "", append(slices.Clone(n), "-h")...)
			if hs != 0 || hs != ds || hout != dout || herr != derr {
				name := strings.Join(n, " ")
				t.Errorf("bridgekit help %s (status %d) differs from bridgekit %s -h (status %d):\n%s\n---\n%s", name, hs, name, ds, herr, derr)
			}
			if !strings.Contains(herr, "usage: bridgekit "+strings.Join(n, " ")) {
				t.Errorf("bridgekit help %s: %q", strings.Join(n, " "), herr)
			}
		}
	}
	if status, _, stderr := runCmd(t, "", "help"); status != 0 || !strings.Contains(stderr, "usage: bridgekit COMMAND") {
		t.Errorf("bridgekit help: status %d, %q", status, stderr)
	}
	if status, _, _ := runCmd(t, "", "help", "nope"); status != 2 {
		t.Errorf("bridgekit help nope: status %d, want 2", status)
	}
}

// Every subcommand's -h says what it does, beyond its flags, and no
// usage text back-quotes a word by mistake (the flag package shows a
// back-quoted word as the value's name: "-no-generate make generate").
func TestEveryHelpDescribes(t *testing.T) {
	sets := flagSets(t)
	for full, fs := range sets {
		_, _, text := runCmd(t, "", append(strings.Fields(full), "-h")...)
		desc, _, _ := strings.Cut(text, "\n  -")
		if sentences := strings.Count(desc, ". ") + strings.Count(desc, ".\n"); sentences == 0 {
			t.Errorf("bridgekit %s -h describes nothing:\n%s", full, text)
		}
		fs.VisitAll(func(f *flag.Flag) {
			// The flag package's own names are lower case (string,
			// duration, value); ours are upper case (FILE, [METHOD] POINTER).
			name, _ := flag.UnquoteUsage(f)
			if name != strings.ToUpper(name) && !slices.Contains([]string{"string", "duration", "int", "uint", "float", "value"}, name) {
				t.Errorf("bridgekit %s --%s: value name %q", full, f.Name, name)
			}
		})
	}
}

func TestVersion(t *testing.T) {
	for _, arg := range []string{"--version", "-version"} {
		status, stdout, _ := runCmd(t, "", arg)
		if status != 0 || !strings.HasPrefix(stdout, "bridgekit ") || !strings.Contains(stdout, "go1.") {
			t.Errorf("bridgekit %s: status %d, %q", arg, status, stdout)
		}
	}
}
