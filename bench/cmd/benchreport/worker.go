package main

import (
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strings"

	"github.com/bridgekit/bridgekit/bench"
)

// workerResult is what a worker process writes to its -result file.
type workerResult struct {
	Metrics bench.Metrics `json:"metrics,omitempty"`
	Err     string        `json:"err,omitempty"`
	Partial bool          `json:"partial,omitempty"` // Err set, but Metrics valid
}

// buildInfo describes the binary a worker runs in.
type buildInfo struct {
	GoVersion    string            `json:"goVersion"`
	GOEXPERIMENT string            `json:"goexperiment"`
	GOMAXPROCS   int               `json:"gomaxprocs"`
	NumCPU       int               `json:"numCPU"`
	Deps         map[string]string `json:"deps"`
}

func currentBuildInfo() buildInfo {
	bi := buildInfo{
		GoVersion:  runtime.Version(),
		GOMAXPROCS: runtime.GOMAXPROCS(0),
		NumCPU:     runtime.NumCPU(),
		Deps:       map[string]string{},
	}
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, s := range info.Settings {
			if s.Key == "GOEXPERIMENT" {
				bi.GOEXPERIMENT = s.Value
			}
		}
		for _, d := range info.Deps {
			v := d.Version
			if d.Replace != nil {
				v = "=> " + d.Replace.Path
			}
			bi.Deps[d.Path] = v
		}
	}
	return bi
}

// runWorker runs one scenario for one runtime in this process and writes a
// workerResult (or, for scenario "info", a buildInfo) to resultPath.
func runWorker(scenario, rtKey, resultPath, cpuProfile, memProfile string, quick bool) error {
	write := func(v any) error {
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		return os.WriteFile(resultPath, b, 0o644)
	}
	if scenario == "info" {
		return write(currentBuildInfo())
	}
	if memProfile != "" {
		runtime.MemProfileRate = 1
	}
	sc, err := bench.LookupScenario(scenario)
	if err != nil {
		return err
	}
	var rt bench.Runtime
	if !sc.Codec {
		if rt, err = bench.Lookup(rtKey); err != nil {
			return err
		}
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	if cpuProfile != "" {
		f, err := os.Create(cpuProfile)
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer f.Close()
		defer pprof.StopCPUProfile()
	}
	m, runErr := sc.Run(rt, bench.Profile{Quick: quick, Long: cpuProfile != "", Exe: exe})
	if memProfile != "" {
		runtime.GC() // the allocs profile is as of the last GC

		f, err := os.Create(memProfile)
		if err != nil {
			return err
		}
		if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
			return err
		}
		f.Close()
	}
	res := workerResult{Metrics: m}
	if runErr != nil {
		res.Err = strings.TrimSpace(runErr.Error())
		res.Partial = bench.IsPartial(runErr)
		if !res.Partial {
			res.Metrics = nil
		}
	}
	if err := write(res); err != nil {
		return fmt.Errorf("writing result: %w", err)
	}
	return nil
}
