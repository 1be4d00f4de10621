package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"time"
)

// The flag vocabulary: a flag name that more than one subcommand takes
// means one thing in all of them. Each entry is the name, the kind of its
// value and its meaning, with which every subcommand's usage text of the
// flag begins (what follows says what it is for that subcommand).
// TestFlagVocabulary reads every subcommand's flag set and fails on a name
// two subcommands use that is not here, and on a use that does not fit
// its entry; docs/bridgekit/README.md lists the entries (the test checks
// that too). A meaning's back-quoted word names the flag's value, as the
// flag package reads usage texts. A subcommand that adds a flag another one has takes its
// entry; a new shared flag gets an entry here and a row in the README.
var vocabulary = []flagMeaning{
	{"json", "bool", "write JSON to stdout instead of text"},
	{"json-out", "string", "also write the JSON to `FILE`"},
	{"timeout", "duration", "give each scenario at most `D`"},
	{"deadline", "duration", "give the whole run at most `D` (0: no bound)"},
	{"stderr", "bool", "pass the peer's stderr through to ours"},
	{"strict", "bool", "report as findings what is otherwise a note"},
	{"protocol", "string", "read the traffic as `PROTOCOL`"},
	{"session", "string", "the trace session `ID`"},
	{"side", "string", "the `SIDE` bridgekit plays"},
	{"role", "string", "the AgentPM service `ROLE`"},
	{"authenticate", "string", "the authenticate method `ID`"},
	{"root", "string", "the repository root `DIR`"},
	{"addr", "string", "listen on `ADDR`"},
	{"allow-remote", "bool", "let the listening address be a non-loopback one"},
	{"out", "string", "append the records as JSONL to `FILE`"},
	{"store", "string", "keep what is recorded, durably, in `PATH`"},
	{"ui", "string", "serve the live inspector on `ADDR`"},
	{"ui-allow-remote", "bool", "let --ui listen on a non-loopback address"},
}

// A flagMeaning is one entry of the vocabulary.
type flagMeaning struct {
	name, kind, meaning string
}

// meaningOf returns the vocabulary's meaning of name; it panics for a name
// not in the vocabulary (a programming error the tests catch at once).
func meaningOf(name string) string {
	for _, m := range vocabulary {
		if m.name == name {
			return m.meaning
		}
	}
	panic("flag --" + name + " is not in the vocabulary")
}

// usageOf is the usage text of a vocabulary flag: its meaning, then what
// it is for this subcommand.
func usageOf(name, detail string) string {
	if detail == "" {
		return meaningOf(name)
	}
	return meaningOf(name) + ": " + detail
}

// jsonOutput is --json and --json-out: the JSON a subcommand writes, to
// stdout instead of its text, and/or to a file beside it.
type jsonOutput struct {
	stdout bool
	file   string
}

// addJSON defines --json and --json-out on fs; what names what the JSON
// holds ("the results").
func addJSON(fs *flag.FlagSet, what string) *jsonOutput {
	j := &jsonOutput{}
	fs.BoolVar(&j.stdout, "json", false, usageOf("json", what))
	fs.StringVar(&j.file, "json-out", "", usageOf("json-out", "the same JSON as --json, while the text goes to stdout"))
	return j
}

// wanted says whether any JSON is to be written.
func (j *jsonOutput) wanted() bool { return j.stdout || j.file != "" }

// open returns where the JSON goes (stdout, the file, or both) and a
// function that closes the file. Nothing is opened when no JSON is wanted.
func (j *jsonOutput) open(stdout io.Writer) (io.Writer, func() error, error) {
	var ws []io.Writer
	if j.stdout {
		ws = append(ws, stdout)
	}
	closer := func() error { return nil }
	if j.file != "" {
		f, err := os.Create(j.file)
		if err != nil {
			return nil, nil, fmt.Errorf("--json-out: %w", err)
		}
		ws = append(ws, f)
		closer = f.Close
	}
	switch len(ws) {
	case 0:
		return io.Discard, closer, nil
	case 1:
		return ws[0], closer, nil
	}
	return io.MultiWriter(ws...), closer, nil
}

// addTimeout defines --timeout, the bound on each scenario (detail says
// what a scenario is for the subcommand).
func addTimeout(fs *flag.FlagSet, def time.Duration, detail string) *time.Duration {
	return fs.Duration("timeout", def, usageOf("timeout", detail))
}

// addDeadline defines --deadline, the bound on the whole run (0: none).
func addDeadline(fs *flag.FlagSet, def time.Duration, detail string) *time.Duration {
	return fs.Duration("deadline", def, usageOf("deadline", detail))
}

// addStderr defines --stderr.
func addStderr(fs *flag.FlagSet, detail string) *bool {
	return fs.Bool("stderr", false, usageOf("stderr", detail))
}
