package main

import (
	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/bindrules"
)

// Replay's comparison rules are package bindrules', which the inspector's
// diff shares.
type (
	replayRule  = bindrules.Rule
	replayRules = bindrules.Set
)

var (
	defaultReplayRules = bindrules.Defaults
	parseReplayRule    = bindrules.Parse
	newReplayRules     = bindrules.NewSet
	decodeGeneric      = bindrules.Decode
	pointerString      = bindrules.Pointer
)
