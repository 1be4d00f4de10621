package conform

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

func bytesReader(b []byte) io.Reader { return bytes.NewReader(b) }

// Summary counts a run's results.
type Summary struct {
	Pass           int  `json:"pass"`
	Fail           int  `json:"fail"`
	NotImplemented int  `json:"not_implemented"`
	ExpectedFail   int  `json:"expected_failures"`
	Stale          int  `json:"stale"`
	NotRun         int  `json:"not_run"`
	OK             bool `json:"ok"`
}

// Summarize counts results.
func Summarize(results []Result) Summary {
	var s Summary
	for _, r := range results {
		switch r.Status {
		case Pass:
			s.Pass++
		case Fail:
			s.Fail++
		case NotImplemented:
			s.NotImplemented++
		case ExpectedFail:
			s.ExpectedFail++
		case Stale:
			s.Stale++
		case NotRun:
			s.NotRun++
		}
	}
	s.OK = s.Fail == 0 && s.Stale == 0 && s.NotRun == 0
	return s
}

// WriteTable writes one row per scenario, the problems of a failing one
// under it, and the summary.
func WriteTable(w io.Writer, results []Result, elapsed time.Duration) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SCENARIO\tSTATUS\tDETAIL")
	for _, r := range results {
		detail := r.Detail
		if r.Reason != "" {
			detail = strings.TrimSpace(detail + " (baseline: " + r.Reason + ")")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", r.ID, r.Status, oneLine(detail))
		for _, p := range r.Problems {
			fmt.Fprintf(tw, "\t\t- %s\n", oneLine(p.String()))
		}
		for _, p := range r.Notes {
			fmt.Fprintf(tw, "\t\t  note: %s\n", oneLine(p.String()))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	s := Summarize(results)
	verdict := "ok"
	if !s.OK {
		verdict = "FAILED"
	}
	notRun := ""
	if s.NotRun > 0 {
		notRun = fmt.Sprintf(", %d not run", s.NotRun)
	}
	_, err := fmt.Fprintf(w, "%s: %d passed, %d failed, %d not implemented, %d expected failures, %d stale baseline entries%s (%v)\n",
		verdict, s.Pass, s.Fail, s.NotImplemented, s.ExpectedFail, s.Stale, notRun, elapsed.Round(time.Millisecond))
	return err
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// Report is the JSON form of a run (--json).
type Report struct {
	Side       string   `json:"side"`
	Command    []string `json:"command"`
	Started    string   `json:"started"`
	DurationMS float64  `json:"duration_ms"`
	Summary    Summary  `json:"summary"`
	Scenarios  []Result `json:"scenarios"`
}

// WriteJSON writes the report as indented JSON.
func WriteJSON(w io.Writer, rep Report) error {
	if rep.Scenarios == nil {
		rep.Scenarios = []Result{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rep)
}
