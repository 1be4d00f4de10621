package main

import (
	"bufio"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/frames"
	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/tracelog"
)

// prettyPrinter writes a readable transcript of a session: one line per
// frame (time, direction, kind, method, id, size, latency), problems
// indented below it. Colour is optional.
type prettyPrinter struct {
	w      *bufio.Writer
	colour bool
	start  time.Time
}

func newPrettyPrinter(w io.Writer, colour bool) *prettyPrinter {
	return &prettyPrinter{w: bufio.NewWriter(w), colour: colour}
}

const (
	cReset  = "\x1b[0m"
	cDim    = "\x1b[2m"
	cRed    = "\x1b[31m"
	cGreen  = "\x1b[32m"
	cYellow = "\x1b[33m"
	cBlue   = "\x1b[34m"
	cCyan   = "\x1b[36m"
	cBold   = "\x1b[1m"
)

func (p *prettyPrinter) c(code, s string) string {
	if !p.colour || s == "" {
		return s
	}
	return code + s + cReset
}

func (p *prettyPrinter) frame(r *tracelog.Record) {
	if p.start.IsZero() {
		p.start = r.Time
	}
	arrow, dc := "→", cBlue // to the command
	if r.Dir == frames.Out {
		arrow, dc = "←", cGreen
	}
	kc := cCyan
	switch r.Kind {
	case frames.Error, frames.Invalid:
		kc = cRed
	case frames.Notification:
		kc = cDim
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s %s", p.c(cDim, fmt.Sprintf("%9.3fs", r.Time.Sub(p.start).Seconds())), p.c(dc, arrow), p.c(kc, fmt.Sprintf("%-12s", r.Kind)))
	if r.Method != "" {
		b.WriteString(" " + p.c(cBold, r.Method))
	}
	if r.Qualifier != "" {
		b.WriteString(" [" + r.Qualifier + "]")
	}
	if len(r.ID) > 0 {
		b.WriteString(" id=" + string(r.ID))
	}
	fmt.Fprintf(&b, " %s", p.c(cDim, size(r.Size)))
	if r.LatencyUS != nil {
		b.WriteString(" " + p.c(cYellow, r.Latency().Round(time.Microsecond).String()))
	}
	if r.Truncated {
		b.WriteString(p.c(cDim, " (recorded truncated)"))
	}
	if r.Redacted {
		b.WriteString(p.c(cDim, " (secrets masked)"))
	}
	b.WriteByte('\n')
	for _, pr := range r.Problems {
		p.problem(&b, pr)
	}
	for _, n := range r.Notes {
		at := ""
		if n.Pointer != "" {
			at = " at " + n.Pointer
		}
		fmt.Fprintf(&b, "           %s %s\n", p.c(cDim, "note "+n.Code+at+":"), n.Message)
	}
	p.w.WriteString(b.String())
}

func (p *prettyPrinter) problem(b *strings.Builder, pr frames.Problem) {
	at := ""
	if pr.Pointer != "" {
		at = " at " + pr.Pointer
	}
	fmt.Fprintf(b, "           %s %s\n", p.c(cRed, "! "+pr.Code+at+":"), pr.Message)
}

func (p *prettyPrinter) end(r *tracelog.Record) {
	var b strings.Builder
	how := fmt.Sprintf("exit status %d", *r.Status)
	if r.Signal != "" {
		how += " (" + r.Signal + ")"
	}
	fmt.Fprintf(&b, "%s session %s ended: %s\n", p.c(cDim, "---"), r.Session, how)
	for _, pr := range r.Problems {
		p.problem(&b, pr)
	}
	p.w.WriteString(b.String())
}

func (p *prettyPrinter) flush() { p.w.Flush() }

func size(n int) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
