module github.com/bridgekit/bridgekit/bench

go 1.26.0

require (
	github.com/bridgekit/bridgekit v0.1.0
	github.com/coder/acp-go-sdk v0.13.5
	github.com/go-json-experiment/json v1.27.2
	github.com/sourcegraph/jsonrpc2 v0.2.3
	golang.org/x/exp/jsonrpc2 v0.0.0-20260709172345-9ea1abe57597
)

require (
	golang.org/x/exp/event v0.0.0-20260611194520-c48552f49976 // indirect
	golang.org/x/xerrors v0.0.0-20240903120638-7835f813f4da // indirect
)
