module github.com/bridgekit/bridgekit/cmd/bridgekit

go 1.26.0

require (
	github.com/bridgekit/bridgekit v0.0.0-00010101000000-000000000000
	github.com/go-json-experiment/json v1.27.2
)

replace github.com/bridgekit/bridgekit => ../..
