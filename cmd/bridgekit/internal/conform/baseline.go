package conform

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
)

// A Baseline lists the scenarios expected to fail, each with why. It is a
// JSON file:
//
//	{"side": "harn-host", "expected_failures": [{"id": "harn-host/u64-id", "reason": "ids are JS numbers"}]}
type Baseline struct {
	Side     string          `json:"side,omitempty"`
	Expected []BaselineEntry `json:"expected_failures"`
}

// BaselineEntry is one expected failure.
type BaselineEntry struct {
	ID     string `json:"id"`
	Reason string `json:"reason"`
}

// LoadBaseline reads and checks a baseline file: every entry needs an id
// and a reason, and no id may appear twice.
func LoadBaseline(path string) (*Baseline, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var bl Baseline
	dec := json.NewDecoder(bytesReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&bl); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	seen := map[string]bool{}
	for i, e := range bl.Expected {
		switch {
		case e.ID == "":
			return nil, fmt.Errorf("%s: /expected_failures/%d/id: missing", path, i)
		case e.Reason == "":
			return nil, fmt.Errorf("%s: /expected_failures/%d/reason: every expected failure needs a reason", path, i)
		case seen[e.ID]:
			return nil, fmt.Errorf("%s: /expected_failures/%d/id: %s is listed twice", path, i, e.ID)
		}
		seen[e.ID] = true
	}
	return &bl, nil
}

// ErrWrongSide is returned by Apply for a baseline written for another side.
var ErrWrongSide = errors.New("the baseline is for another side")

// Apply marks the results the baseline lists: a failure it lists becomes
// an expected failure; a listed scenario that passes, is not implemented
// or does not exist is stale, and stale is a failure. It returns the
// results with one row added per entry that names no scenario run.
func (bl *Baseline) Apply(side string, results []Result, ran func(id string) bool) ([]Result, error) {
	if bl == nil {
		return results, nil
	}
	if bl.Side != "" && bl.Side != side {
		return results, fmt.Errorf("%w: %q, not %q", ErrWrongSide, bl.Side, side)
	}
	for _, e := range bl.Expected {
		i := slices.IndexFunc(results, func(r Result) bool { return r.ID == e.ID })
		if i < 0 {
			if ran != nil && !ran(e.ID) {
				continue // filtered out of this run
			}
			results = append(results, Result{ID: e.ID, Status: Stale, Reason: e.Reason,
				Detail: "the baseline lists a scenario this side does not have"})
			continue
		}
		r := &results[i]
		r.Reason = e.Reason
		if r.Status == NotRun {
			continue // neither confirmed nor contradicted
		}
		if r.Status == Fail {
			r.Status = ExpectedFail
			continue
		}
		r.Detail = fmt.Sprintf("listed as an expected failure, but it is %s now: remove it from the baseline", r.Status)
		r.Status = Stale
	}
	return results, nil
}
