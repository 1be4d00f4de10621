package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/validate"
)

func init() {
	register(command{name: "validate", summary: "check recorded traffic against the catalogues, the schemas and the generated types", run: runValidate})
}

// runValidate is `bridgekit validate [--protocol P] [--json] FILE...|-`.
func runValidate(ctx context.Context, env *Env, args []string) int {
	fs := newFlags(env, "validate", "[--protocol P] [--json] FILE...|-")
	protocol := fs.String("protocol", "", "the protocol family: "+strings.Join(validate.Protocols, ", ")+" (default: sniffed from the traffic)")
	asJSON := fs.Bool("json", false, "write each problem as a JSON object on a line of its own, and a summary object last")
	if status, stop := parseFlags(fs, args); stop {
		return status
	}
	files := fs.Args()
	if len(files) == 0 {
		fmt.Fprintln(env.Stderr, "bridgekit validate: name the files to check, or - for standard input")
		fs.Usage()
		return 2
	}
	v, err := validate.New(validate.Options{Protocol: *protocol})
	if err != nil {
		fmt.Fprintln(env.Stderr, "bridgekit validate:", err)
		return 2
	}
	enc := json.NewEncoder(env.Stdout)
	problems := 0
	var total validate.Stats
	report := func(p validate.Problem) {
		problems++
		if *asJSON {
			_ = enc.Encode(p)
			return
		}
		fmt.Fprintln(env.Stdout, p.String())
	}
	status := 0
	for _, name := range files {
		if err := ctx.Err(); err != nil {
			fmt.Fprintln(env.Stderr, "bridgekit validate:", err)
			return 1
		}
		var r io.Reader
		display := name
		if name == "-" {
			r, display = env.Stdin, "<stdin>"
		} else {
			f, err := os.Open(name)
			if err != nil {
				fmt.Fprintln(env.Stderr, "bridgekit validate:", err)
				status = 1
				continue
			}
			r = f
		}
		st, err := v.Stream(display, &ctxReader{ctx, r}, report)
		if c, ok := r.(io.Closer); ok && name != "-" {
			c.Close()
		}
		total.Frames += st.Frames
		total.Checked += st.Checked
		total.Truncated += st.Truncated
		if err != nil {
			fmt.Fprintf(env.Stderr, "bridgekit validate: %s: %v\n", display, err)
			status = 1
		}
		if env.Terminal {
			fmt.Fprintf(env.Stderr, "%s: %d frames, %d bodies checked\n", display, st.Frames, st.Checked)
		}
	}
	if *asJSON {
		_ = enc.Encode(map[string]any{"summary": map[string]int{"files": len(files), "frames": total.Frames,
			"checked": total.Checked, "truncated": total.Truncated, "problems": problems}})
	}
	if env.Terminal {
		fmt.Fprintf(env.Stderr, "%d frames in %d files, %d problems", total.Frames, len(files), problems)
		if total.Truncated > 0 {
			fmt.Fprintf(env.Stderr, ", %d truncated frames not checked", total.Truncated)
		}
		fmt.Fprintln(env.Stderr)
	}
	if problems > 0 {
		status = 1
	}
	return status
}

// ctxReader ends a read once ctx has ended (a signal), so validating a
// pipe that never closes stops between lines.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c *ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
