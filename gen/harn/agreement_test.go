package harn

import (
	"testing"

	"github.com/bridgekit/bridgekit/internal/schematest"
	"github.com/bridgekit/bridgekit/runtime/wire/wiretest"
)

// TestGoldenDocuments: the golden documents of testdata/harn round-trip
// (with this package's codec and encoding/json), and every generated type
// accepts exactly the documents its schema (spec/schemas with the
// catalogues' overlays) accepts: its synthesised seeds, the golden
// documents and their systematic mutations, judged by a JSON Schema
// validator and by the generated decoder.
func TestGoldenDocuments(t *testing.T) {
	schematest.CheckPackage(t, "harn", fuzzTypes, Contracts...)
}

// recorder collects what Agreement reports.
type recorder struct{ errs []string }

func (r *recorder) Helper()                           {}
func (r *recorder) Errorf(format string, args ...any) { r.errs = append(r.errs, format) }
func (r *recorder) Fatalf(format string, args ...any) { r.errs = append(r.errs, format) }

// The check can fail: a type judged against the wrong schema disagrees.
func TestAgreementDetectsDisagreement(t *testing.T) {
	spec, err := schematest.Load("../..")
	if err != nil {
		t.Fatal(err)
	}
	var shell wiretest.Type
	for _, typ := range fuzzTypes {
		if typ.Name == "Shell" {
			shell = typ
		}
	}
	shell.Schema = "host-shell-discovery.schema.json#/$defs/no_args" // any object
	var r recorder
	spec.Agreement(&r, []wiretest.Type{shell}, schematest.Options{})
	if len(r.errs) == 0 {
		t.Fatal("a closed Shell judged against an open schema must disagree")
	}
}
