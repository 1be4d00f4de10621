package realagent

import (
	"os"
	"strings"

	"github.com/bridgekit/bridgekit/internal/recorder"
)

// ScrubbedRoot replaces an agent's temporary root in recorded traffic.
const ScrubbedRoot = "/tmp/realagent"

// Scrub returns frames with what is particular to this machine and run
// replaced: the temporary root (root) by ScrubbedRoot, the repository's
// directory by "/bridgekit", and the host name by "host". It also
// recomputes nothing else: methods and ids are kept as they were.
func Scrub(frames []recorder.Frame, root string) []recorder.Frame {
	// Some agents show the root without its leading slash (opencode's
	// titles): that form is replaced too.
	repl := []string{root, ScrubbedRoot, strings.TrimPrefix(root, "/"), strings.TrimPrefix(ScrubbedRoot, "/")}
	if dir := Dir(); dir != "" {
		repl = append(repl, strings.TrimSuffix(dir, "/testdata/agents"), "/bridgekit")
	}
	if h, err := os.Hostname(); err == nil && len(h) > 3 {
		repl = append(repl, h, "host")
	}
	r := strings.NewReplacer(repl...)
	out := make([]recorder.Frame, len(frames))
	for i, f := range frames {
		f.Line = r.Replace(f.Line)
		out[i] = f
	}
	return out
}
