package catalogue

import _ "embed"

// Source is this package's catalogue.go, embedded so that the generator can
// publish the catalogue format's JSON Schema with the format's Go doc
// comments as descriptions.
//
//go:embed catalogue.go
var Source string
