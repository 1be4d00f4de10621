package codegen

import (
	"os"
	"reflect"
	"testing"
)

// Operations, reading the catalogues alone, lists what Methods, reading
// the whole spec, says of every method that carries operations.
func TestOperationsAgreesWithMethods(t *testing.T) {
	fsys := os.DirFS("../../spec")
	s, err := LoadFS(fsys)
	if err != nil {
		t.Fatal(err)
	}
	all, err := s.Methods()
	if err != nil {
		t.Fatal(err)
	}
	var want []MethodSchema
	for _, m := range all {
		if m.Operations != nil {
			want = append(want, m)
		}
	}
	got, err := Operations(fsys)
	if err != nil {
		t.Fatal(err)
	}
	if len(want) < 2 || !reflect.DeepEqual(got, want) {
		t.Errorf("Operations:\n%+v\nMethods:\n%+v", got, want)
	}
}
