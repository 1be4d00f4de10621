package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/store"
	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/traffic"
	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/validate"
)

func init() {
	register(command{name: "validate", summary: "check recorded traffic against the catalogues, the schemas and the generated types", run: runValidate})
}

const validateSynopsis = `[--protocol P] [--strict] [--json | --json-out FILE] FILE...|-

Checks recorded traffic, offline: every frame of each FILE (- for standard
input) against the protocol's catalogue (methods, directions, ids paired
with their replies, requests never answered), its JSON Schema and the
generated types (a decode and re-encode round trip). A problem is printed
with its file, line, method, code and the JSON pointer of what is wrong.
An enum value or union variant this version does not know, which the
protocols' forward-compatibility rule keeps, is printed as a note, with
the nearest known value; --strict makes it a problem.

FILE is a trace (bridgekit trace --out, JSONL records), the protocol's own
stream (NDJSON, one frame a line: a peer's stdout, a tee log) or a session
store (trace --store: every session in it). Anything else is refused with
the reason.

Exit status: 0 no problem (notes aside), 1 problems found (or a file
cannot be read), 2 a usage error.

Flags:`

// runValidate is bridgekit validate.
func runValidate(ctx context.Context, env *Env, args []string) int {
	fs := newFlags(env, "validate", validateSynopsis)
	protocol := fs.String("protocol", "", usageOf("protocol", strings.Join(validate.Protocols, ", ")+" (default: sniffed from the traffic)"))
	jsonOut := addJSON(fs, "each problem as an object on a line of its own, and a summary object last")
	strict := fs.Bool("strict", false, usageOf("strict", "enum values and union variants this version does not know are problems, not notes"))
	if status, stop := parseFlags(fs, args); stop {
		return status
	}
	files := fs.Args()
	if len(files) == 0 {
		fmt.Fprintln(env.Stderr, "bridgekit validate: name the files to check, or - for standard input")
		fs.Usage()
		return 2
	}
	v, err := validate.New(validate.Options{Protocol: *protocol, Strict: *strict})
	if err != nil {
		fmt.Fprintln(env.Stderr, "bridgekit validate:", err)
		return 2
	}
	jw, closeJSON, err := jsonOut.open(env.Stdout)
	if err != nil {
		fmt.Fprintln(env.Stderr, "bridgekit validate:", err)
		return 1
	}
	defer func() {
		if err := closeJSON(); err != nil {
			fmt.Fprintln(env.Stderr, "bridgekit validate: --json-out:", err)
		}
	}()
	enc := json.NewEncoder(jw)
	problems := 0
	var total validate.Stats
	notes := 0
	report := func(p validate.Problem) {
		if p.Note {
			notes++
		} else {
			problems++
		}
		if jsonOut.wanted() {
			_ = enc.Encode(p)
		}
		if !jsonOut.stdout {
			fmt.Fprintln(env.Stdout, p.String())
		}
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
			// What is no traffic is refused with the reason; a store is
			// checked session by session.
			format, err := traffic.Sniff(name)
			if err != nil {
				fmt.Fprintln(env.Stderr, "bridgekit validate:", err)
				status = 1
				continue
			}
			if format == traffic.Store {
				st, err := validateStore(ctx, v, name, report)
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
				continue
			}
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
	if jsonOut.wanted() {
		_ = enc.Encode(map[string]any{"summary": map[string]int{"files": len(files), "frames": total.Frames,
			"checked": total.Checked, "truncated": total.Truncated, "problems": problems, "notes": notes}})
	}
	if env.Terminal {
		fmt.Fprintf(env.Stderr, "%d frames in %d files, %d problems, %d notes", total.Frames, len(files), problems, notes)
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

// validateStore validates every session of the store at path, each as
// the trace it holds, named "path#session" in problems.
func validateStore(ctx context.Context, v *validate.Validator, path string, report func(validate.Problem)) (validate.Stats, error) {
	var total validate.Stats
	db, err := store.Open(ctx, path)
	if err != nil {
		return total, err
	}
	defer db.Close()
	sessions, err := db.Sessions(ctx)
	if err != nil {
		return total, err
	}
	slices.SortFunc(sessions, func(a, b store.Session) int { return a.Started.Compare(b.Started) })
	for _, s := range sessions {
		// The records go to the validator through a pipe, a page at a
		// time: a long session is never held whole.
		pr, pw := io.Pipe()
		done := make(chan struct{})
		go func() {
			defer close(done)
			const page = 512
			var line []byte
			for after := int64(-1); ; {
				recs, err := db.Records(ctx, s.ID, after, page)
				if err != nil {
					pw.CloseWithError(err)
					return
				}
				for _, r := range recs {
					if line, err = r.Marshal(line[:0]); err == nil {
						_, err = pw.Write(line)
					}
					if err != nil {
						pw.CloseWithError(err)
						return
					}
					after = r.Seq
				}
				if len(recs) < page {
					pw.Close()
					return
				}
			}
		}()
		st, err := v.Stream(path+"#"+s.ID, &ctxReader{ctx, pr}, report)
		pr.CloseWithError(io.ErrClosedPipe) // ends the writer if Stream stopped early
		<-done
		total.Frames += st.Frames
		total.Checked += st.Checked
		total.Truncated += st.Truncated
		if err != nil {
			return total, fmt.Errorf("session %s: %w", s.ID, err)
		}
	}
	return total, nil
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
