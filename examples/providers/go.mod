module github.com/bridgekit/bridgekit/examples/providers

go 1.26.0

require (
	github.com/bridgekit/bridgekit v0.1.0
	github.com/go-json-experiment/json v1.27.2
	go.etcd.io/bbolt v1.5.0
	go.uber.org/goleak v1.3.0
)

require golang.org/x/sys v0.50.0 // indirect
