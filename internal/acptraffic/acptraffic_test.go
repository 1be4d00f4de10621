package acptraffic

import (
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/bridgekit/bridgekit/internal/realagent"
	"github.com/bridgekit/bridgekit/internal/recorder"
	"github.com/bridgekit/bridgekit/runtime/redact"
	"github.com/bridgekit/bridgekit/runtime/wire/wiretest"
)

var update = flag.Bool("update", false, "rewrite testdata/acp/traffic/untyped_baseline.txt from what the traffic shows")

func trafficDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "testdata", "acp", "traffic")
}

// recordings returns every recorded session: agent directory -> frames.
func recordings(t *testing.T) map[string][]recorder.Frame {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(trafficDir(), "*", "*.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 2 {
		t.Fatalf("want recorded traffic of at least two agents, found %d files", len(files))
	}
	out := map[string][]recorder.Frame{}
	for _, f := range files {
		frames, err := recorder.ReadFile(f)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		rel, _ := filepath.Rel(trafficDir(), f)
		out[filepath.ToSlash(rel)] = frames
	}
	return out
}

// Every recorded frame of every real agent decodes with gen/acp's types,
// matched to its method (a reply through its request's id), and encodes
// again into a document structurally equal to the original (same members
// and values; member order and insignificant whitespace aside, since the
// generated encoders write members in schema order).
func TestRecordedTrafficRoundTrips(t *testing.T) {
	for pkg, p := range map[string]Package{"acp": Stable, "acpunstable": Unstable} {
		for name, frames := range recordings(t) {
			t.Run(pkg+"/"+name, func(t *testing.T) { roundTrips(t, p, frames) })
		}
	}
}

// roundTrips decodes a recording with p and checks every frame re-encodes
// as it arrived.
func roundTrips(t *testing.T, p Package, frames []recorder.Frame) {
	msgs, errs := p.Decode(frames)
	for _, err := range errs {
		t.Error(err)
	}
	kinds := map[string]int{}
	for _, m := range msgs {
		kinds[m.Kind]++
		if m.Value == nil {
			continue
		}
		if !wiretest.EqualJSON(t, m.Raw, m.Reencoded) {
			t.Errorf("frame %d (%s %s): re-encoded differently", m.Frame.Seq, m.Method, m.Part)
		}
	}
	if len(msgs) != len(frames) {
		t.Errorf("%d of %d frames decoded", len(msgs), len(frames))
	}
	if kinds[Request] == 0 || kinds[Result] == 0 || kinds[Notification] == 0 {
		t.Errorf("a whole session has requests, results and notifications: %v", kinds)
	}
}

// untyped returns what each recording holds that gen/acp keeps only as raw
// JSON (Extra, Unknown) outside _meta, one line per place:
// "<recording>  <method> <params|result>  <Type.member or Union{tag}>".
//
// A place untyped in gen/acp but typed in gen/acpunstable is typed by ACP's
// unstable schema and not listed: untyped returns the places both packages
// keep raw, and unstableOnly those only gen/acpunstable types.
func untyped(t *testing.T) (lines, unstableOnly []string) {
	stable := untypedBy(t, Stable)
	unstable := untypedBy(t, Unstable)
	for _, l := range stable {
		if slices.Contains(unstable, l) {
			lines = append(lines, l)
		} else {
			unstableOnly = append(unstableOnly, l)
		}
	}
	return lines, unstableOnly
}

// untypedBy is what p's types keep raw in each recording.
func untypedBy(t *testing.T, p Package) []string {
	var lines []string
	for name, frames := range recordings(t) {
		msgs, errs := p.Decode(frames)
		if len(errs) > 0 {
			t.Errorf("%s: %v", name, errs)
		}
		for _, m := range msgs {
			if m.Untyped && m.Kind != Error {
				lines = append(lines, name+"\t"+m.Method+" "+m.Part+"\t(a method no catalogue types)")
				continue
			}
			if m.Value == nil {
				continue
			}
			for _, u := range Untyped(m.Value) {
				lines = append(lines, name+"\t"+m.Method+" "+m.Part+"\t"+u)
			}
		}
	}
	slices.Sort(lines)
	return slices.Compact(lines)
}

const baselineHeader = `# Members of the recorded real-agent traffic (testdata/acp/traffic) that both gen/acp and
# gen/acpunstable keep only as raw JSON (a struct's Extra, a union's Unknown), outside _meta: typed by
# neither ACP v1 schema, stable or unstable, nor by an overlay of ours. One line per place:
#   <recording> TAB <method> <params|result> TAB <Type.member> or <Union{tag=value}>
# TestRecordedTrafficIsTyped fails on a place not listed here, and on a line listed here that is now
# typed (stale). Regenerate with: go test ./internal/acptraffic -run TestRecordedTrafficIsTyped -args -update
`

// Every member of the recorded traffic outside _meta is typed, by the ACP
// v1 schemas (stable, in gen/acp, or unstable, in gen/acpunstable) or by an
// overlay of ours: the test lists each one that is not.
// Those of today are in the baseline; a new one fails, and so does a
// baseline entry that is now typed, so the baseline can only shrink.
func TestRecordedTrafficIsTyped(t *testing.T) {
	got, unstableOnly := untyped(t)
	for _, l := range unstableOnly {
		t.Logf("typed only by ACP's unstable schema (gen/acpunstable): %s", l)
	}
	if len(unstableOnly) == 0 {
		t.Error("no place is typed by gen/acpunstable alone, so the test no longer tells the two packages apart")
	}
	path := filepath.Join(trafficDir(), "untyped_baseline.txt")
	if *update {
		if err := os.WriteFile(path, []byte(baselineHeader+strings.Join(got, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, l := range strings.Split(string(data), "\n") {
		if l != "" && !strings.HasPrefix(l, "#") {
			want = append(want, l)
		}
	}
	for _, g := range got {
		if !slices.Contains(want, g) {
			t.Errorf("untyped, and not in the baseline: %s", g)
		}
	}
	for _, w := range want {
		if !slices.Contains(got, w) {
			t.Errorf("stale baseline entry (now typed, or no longer sent): %s", w)
		}
	}
	if t.Failed() {
		t.Log("regenerate the baseline with: go test ./internal/acptraffic -run TestRecordedTrafficIsTyped -args -update")
	}
}

// prose is an auth scheme's name followed by a word of lower-case letters.
var prose = regexp.MustCompile(`(?i:\b(basic|bearer|token))(\s+)[a-z]+\b`)

// The committed traffic holds nothing of the machine it was recorded on:
// not its host name, no home or repository path, no user name; and no
// credential but realagent's obviously fake key.
func TestRecordedTrafficIsScrubbed(t *testing.T) {
	host, _ := os.Hostname()
	wd, _ := os.Getwd()
	repo := filepath.Dir(filepath.Dir(wd))
	banned := []string{"/home/", "/root", "/Users/", repo}
	if len(host) > 3 {
		banned = append(banned, host)
	}
	if u := os.Getenv("USER"); len(u) > 3 {
		banned = append(banned, "/"+u+"/")
	}
	for name, frames := range recordings(t) {
		for _, f := range frames {
			for _, b := range banned {
				if strings.Contains(f.Line, b) {
					t.Errorf("%s frame %d holds %q", name, f.Seq, b)
				}
			}
			// Prose the auth-scheme shape ("Basic <credential>", "token
			// <credential>") takes for a credential: the agents' command
			// descriptions say "basic primitives", "token counting". A word
			// of lower-case letters only is no credential.
			line := prose.ReplaceAllString(f.Line, "${1}${2}word")
			if red := redact.New().String(line); red != line {
				t.Errorf("%s frame %d holds something shaped like a secret: %.300s", name, f.Seq, red)
			}
		}
	}
}

// Every frame the host sent the six agents (examples/host's recorded turns,
// testdata/acp/traffic/<agent>-<version>) is ACP's stable protocol and
// nothing more: it decodes into gen/acp's types, re-encodes equal, and has
// no member those types keep raw outside _meta. In particular a permission
// denial carries no Harn "reason" member (a plain ACP agent did not
// advertise Harn's extensions).
func TestFramesSentToTheAgentsAreStableACP(t *testing.T) {
	recs := recordings(t)
	for _, name := range realagent.Names() {
		spec := realagent.Agents[name]
		rec := spec.Name + "-" + spec.Version + "/turn.jsonl"
		frames, ok := recs[rec]
		if !ok {
			t.Errorf("no recorded turn %s", rec)
			continue
		}
		msgs, errs := Stable.Decode(frames)
		for _, err := range errs {
			t.Errorf("%s: %v", rec, err)
		}
		sent := 0
		for _, m := range msgs {
			if m.Frame.Dir != recorder.Send {
				continue
			}
			sent++
			switch {
			case m.Kind == Error:
				// An error answer: ACP's error object, whatever the method.
			case m.Untyped:
				t.Errorf("%s frame %d: the host sent %s %s, which ACP does not define", rec, m.Frame.Seq, m.Method, m.Part)
			case m.Value != nil:
				if u := Untyped(m.Value); len(u) > 0 {
					t.Errorf("%s frame %d: %s %s has members outside ACP: %v", rec, m.Frame.Seq, m.Method, m.Part, u)
				}
				if !wiretest.EqualJSON(t, m.Raw, m.Reencoded) {
					t.Errorf("%s frame %d: re-encoded differently", rec, m.Frame.Seq)
				}
			}
			if strings.Contains(m.Frame.Line, `"reason"`) && m.Method == "session/request_permission" {
				t.Errorf("%s frame %d: a permission answer with a reason: %s", rec, m.Frame.Seq, m.Frame.Line)
			}
		}
		if sent < 3 { // initialize, session/new, session/prompt at least
			t.Errorf("%s: %d frames sent", rec, sent)
		}
	}
}
