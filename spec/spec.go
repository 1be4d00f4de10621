// Package spec embeds bridgekit's spec directory, the generator's input:
// the method catalogues (catalogue/*.json), the protocol schema files
// (schemas/) and the override table (overrides.json), so that programs
// built from the module (`bridgekit validate`) read the spec they were
// built with, without a checkout.
package spec

import "embed"

// FS holds catalogue/*.json, schemas/ and overrides.json, at the paths
// they have under spec/.
//
//go:embed catalogue/*.json schemas overrides.json
var FS embed.FS
