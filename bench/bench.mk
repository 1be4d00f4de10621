# Benchmarks of bridgekit against acp-go-sdk, x/exp/jsonrpc2 and
# sourcegraph/jsonrpc2 (issue 3). Included by the top-level Makefile.
#
#   make bench              full run (3 runs x default and GOEXPERIMENT=jsonv2
#                           builds, ~10 min); prints the table and rewrites
#                           docs/performance.md
#   make bench-quick        one short run per build (~1 min); prints only
#   make bench BENCH_FLAGS='-only rt-inmem-1,burst-inmem -runs 5'
#   make bench BENCH_FLAGS='-only agentpm-rt-inmem,agentpm-rt-child,agentpm-burst-inmem -out ""'
#                           AgentPM's envelopes against JSON-RPC on bridgekit's
#                           engine (service round trips, a harness_event burst)
#   make bench-test         the bench module's fast sanity tests (CI)
#   make bench-remote       the remote transports against the TS SDK's (issue 32)
#   make bench-trace        bridgekit trace against a plain relay, and
#   make bench-validate     bridgekit validate's frames/s on one core (issue
#                           16): each writes a JSON file here that make
#                           bench runs first and benchreport renders
#   make bench-permission   the permission decision's CPU per path byte
#                           (issue 33), a JSON file here likewise
#   make bench-terminal     a terminal output flood's CPU per MiB against
#                           io.Copy's (issue 33), a JSON file here likewise
#
# bench/ is its own Go module, so none of this runs in the root module's
# `go test ./...`.

BENCH_DIR := $(patsubst %/,%,$(dir $(lastword $(MAKEFILE_LIST))))
BENCH_FLAGS ?=

.PHONY: bench bench-quick bench-test

# The bridgekit command's figures (bench-trace, bench-validate) are
# measured first: benchreport renders the JSON files they leave.
bench: bench-trace bench-validate bench-remote bench-permission bench-terminal
	cd $(BENCH_DIR) && go run ./cmd/benchreport -out ../docs/performance.md $(BENCH_FLAGS)

bench-quick:
	cd $(BENCH_DIR) && go run ./cmd/benchreport -quick -out '' $(BENCH_FLAGS)

bench-test:
	cd $(BENCH_DIR) && go vet ./... && go test -count=1 ./...

# bridgekit trace against a plain relay of the same pipes (issue 16): a
# round trip through each middle process to the same child, p50 with one
# caller and throughput with 16; the target is at most 1.2x. Figures go to
# bench/trace-overhead.json (which benchreport renders) and the test log.
.PHONY: bench-trace
bench-trace:
	cd $(BENCH_DIR)/../cmd/bridgekit && BRIDGEKIT_TRACE_BENCH=$(abspath $(BENCH_DIR))/trace-overhead.json go test -count=1 -run '^TestTraceOverhead$$' -v .

# bridgekit validate's throughput (issue 16: at least 20,000 frames/s of
# mixed ACP traffic on one core): the recorded traffic of real agents,
# GOMAXPROCS=1, by wall time and by CPU time. Figures go to
# bench/validate-throughput.json (which benchreport renders) and the test
# log; BRIDGEKIT_VALIDATE_BENCH_QUICK=1 shortens it.
.PHONY: bench-validate
bench-validate:
	cd $(BENCH_DIR)/../cmd/bridgekit && BRIDGEKIT_VALIDATE_BENCH=$(abspath $(BENCH_DIR))/validate-throughput.json go test -count=1 -run '^TestValidateThroughput$$' -v ./internal/validate

# bridgekit's remote transports against the TypeScript SDK's (issue 32):
# round trips and 50k-update bursts of the four client-server pairs over
# WebSocket and Streamable HTTP, a WebSocket round trip against a bare
# coder/websocket echo, and the idle memory of 1,000 WebSocket sessions.
# Needs node and testdata/interop/acp-ts's node_modules (npm ci). Figures go
# to bench/remote-transports.json, which benchreport renders.
.PHONY: bench-remote
bench-remote:
	cd $(BENCH_DIR)/.. && BRIDGEKIT_REMOTE_BENCH=$(abspath $(BENCH_DIR))/remote-transports.json go test -count=1 -timeout 30m -run '^TestRemoteBench$$' -v ./internal/interop

# The permission decision's CPU per request byte (issue 33, finding 4):
# the red team's worst requests (deep missing paths, many locations, long
# rawInput strings) decided at 1 and 16 MiB in a real workspace, against
# the floor of one lstat per distinct path, in the same run. Figures go to
# bench/permission-decision.json (which benchreport renders).
.PHONY: bench-permission
bench-permission:
	cd $(BENCH_DIR)/.. && BRIDGEKIT_PERMISSION_BENCH=$(abspath $(BENCH_DIR))/permission-decision.json go test -count=1 -run '^TestDecisionCostIsLinearInBytes$$' -v ./servers/host/permission

# The host's CPU per MiB of terminal output (issue 33, finding 8): 16
# terminals flooding in writes of 16 B to 64 KiB, once their rings are full,
# against an io.Copy of the same bytes from as many children writing 64 KiB
# at a time, in the same run; the bound is 3x. Figures go to
# bench/terminal-output.json (which benchreport renders).
.PHONY: bench-terminal
bench-terminal:
	cd $(BENCH_DIR)/.. && BRIDGEKIT_TERMINAL_BENCH=$(abspath $(BENCH_DIR))/terminal-output.json go test -count=1 -timeout 20m -run '^TestOutputFloodCPU$$' -v ./servers/host/terminal
