module github.com/bridgekit/bridgekit

go 1.26.0

require (
	github.com/coder/websocket v1.8.14
	github.com/go-json-experiment/json v1.27.2
	github.com/santhosh-tekuri/jsonschema/v6 v6.0.3
	go.etcd.io/bbolt v1.4.3
	go.uber.org/goleak v1.3.0
	golang.org/x/sys v0.50.0
	golang.org/x/term v0.48.0
)

require (
	github.com/stretchr/testify v1.11.1 // indirect
	golang.org/x/text v0.14.0 // indirect
)
