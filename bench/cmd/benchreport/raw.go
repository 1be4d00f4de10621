package main

import (
	"encoding/json"
	"os"
	"time"

	"github.com/bridgekit/bridgekit/bench"
)

// The raw results of a run, saved with -raw and rendered again with
// -render, so that the report can be regenerated (after editing its
// analysis, say) without measuring again.

type rawReport struct {
	Quick            bool
	Runs             int
	Builds           []rawBuild
	Results          []rawResult
	Profile          string
	Started          time.Time
	Duration         time.Duration
	Load             [2]string
	BridgekitOptions string
	Commands         commandFigures
}

type rawBuild struct {
	Name string
	Info buildInfo
}

type rawResult struct {
	Build, Scenario, Runtime string
	Runs                     []rawOutcome
}

type rawOutcome struct {
	Metrics bench.Metrics `json:",omitempty"`
	Err     string        `json:",omitempty"`
	Partial bool          `json:",omitempty"`
	Hung    bool          `json:",omitempty"`
	Foreign float64
	Retries int `json:",omitempty"`
}

func saveRaw(path string, r *report) error {
	raw := rawReport{
		Quick: r.cfg.quick, Runs: r.cfg.runs, Profile: r.profile,
		Started: r.started, Duration: r.duration, Load: r.load, BridgekitOptions: r.bkOpts, Commands: r.commands,
	}
	for _, b := range r.builds {
		raw.Builds = append(raw.Builds, rawBuild{b.name, b.info})
	}
	for k, outs := range r.results {
		res := rawResult{Build: k.build, Scenario: k.scenario, Runtime: k.rt}
		for _, o := range outs {
			res.Runs = append(res.Runs, rawOutcome{o.metrics, o.err, o.partial, o.hung, o.foreign, o.retries})
		}
		raw.Results = append(raw.Results, res)
	}
	data, err := json.MarshalIndent(raw, "", "\t")
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}

func loadRaw(path string) (*report, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var raw rawReport
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, err
	}
	r := &report{
		cfg:     config{quick: raw.Quick, runs: raw.Runs},
		results: map[key][]outcome{},
		profile: raw.Profile, started: raw.Started, duration: raw.Duration, load: raw.Load, bkOpts: raw.BridgekitOptions,
		commands: raw.Commands,
	}
	if c := &r.commands; c.Trace == nil && c.TraceErr == "" {
		c.TraceErr = "not in " + path
	}
	if c := &r.commands; c.Validate == nil && c.ValidateErr == "" {
		c.ValidateErr = "not in " + path
	}
	for _, b := range raw.Builds {
		r.builds = append(r.builds, &build{name: b.Name, info: b.Info})
	}
	for _, res := range raw.Results {
		k := key{res.Build, res.Scenario, res.Runtime}
		for _, o := range res.Runs {
			r.results[k] = append(r.results[k], outcome{o.Metrics, o.Err, o.Partial, o.Hung, o.Foreign, o.Retries})
		}
	}
	return r, nil
}
