module github.com/bridgekit/bridgekit/generator

go 1.26.0

require (
	github.com/atombender/go-jsonschema v0.24.1
	github.com/dave/jennifer v1.7.1
	github.com/invopop/jsonschema v0.14.0
	github.com/santhosh-tekuri/jsonschema/v6 v6.0.3
	golang.org/x/exp v0.0.0-20261014143641-f0251eb4aa3e
	golang.org/x/tools v0.52.0
)

require (
	dario.cat/mergo v1.0.2 // indirect
	github.com/bahlo/generic-list-go v0.2.0 // indirect
	github.com/buger/jsonparser v1.1.2 // indirect
	github.com/goccy/go-yaml v1.19.2 // indirect
	github.com/pb33f/ordered-map/v2 v2.3.1 // indirect
	go.yaml.in/yaml/v4 v4.0.0-rc.2 // indirect
	golang.org/x/mod v0.42.0 // indirect
	golang.org/x/sync v0.24.0 // indirect
	golang.org/x/text v0.14.0 // indirect
)
