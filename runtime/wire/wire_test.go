package wire_test

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/bridgekit/bridgekit/runtime/wire"
)

func TestExtras(t *testing.T) {
	var x wire.Extras
	x.Set("b", jsontext.Value(`1`))
	x.Set("a", jsontext.Value(`[2]`))
	x.Set("b", jsontext.Value(`3`))
	if v, ok := x.Get("b"); !ok || string(v) != "3" || len(x) != 2 || x[0].Name != "b" {
		t.Fatalf("Set must replace in place: %+v", x)
	}
	x.Delete("b")
	if _, ok := x.Get("b"); ok || len(x) != 1 {
		t.Fatalf("Delete: %+v", x)
	}
}

func TestNullable(t *testing.T) {
	var absent wire.Nullable[int]
	null, some := wire.Null[int](), wire.Some(7)
	if !absent.IsAbsent() || absent.IsNull() || !null.IsNull() || null.IsAbsent() {
		t.Fatal("states")
	}
	if v, ok := some.Get(); !ok || v != 7 {
		t.Fatal("value")
	}
}

func TestReadersRejectWrongKinds(t *testing.T) {
	for _, tc := range []struct {
		in   string
		read func(*jsontext.Decoder) error
		want error
	}{
		{`"x"`, func(d *jsontext.Decoder) error { var n int64; return wire.IntFrom(&n, d) }, wire.ErrWrongKind},
		{`1.5`, func(d *jsontext.Decoder) error { var n int64; return wire.IntFrom(&n, d) }, wire.ErrWrongKind},
		{`1e19`, func(d *jsontext.Decoder) error { var n int64; return wire.IntFrom(&n, d) }, wire.ErrWrongKind},
		{`null`, func(d *jsontext.Decoder) error { var s string; return wire.StringFrom(&s, d) }, wire.ErrNullValue},
		{`[1,null]`, func(d *jsontext.Decoder) error { var v []int64; return wire.ListFrom(wire.IntFrom)(&v, d) }, wire.ErrNullValue},
		{`{"a":"b"}`, func(d *jsontext.Decoder) error { var v map[string]bool; return wire.MapFrom(wire.BoolFrom)(&v, d) }, wire.ErrWrongKind},
	} {
		dec := jsontext.NewDecoder(stringsReader(tc.in))
		if err := tc.read(dec); !errors.Is(err, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.in, err, tc.want)
		}
	}
	dec := jsontext.NewDecoder(stringsReader(`3.0`))
	var n int64
	if err := wire.IntFrom(&n, dec); err != nil || n != 3 {
		t.Errorf("3.0 is an integer: %v %v", n, err)
	}
}

// Generated types report what is wrong with a document as a *wire.DecodeError
// that names the type and member, with a sentinel cause for errors.Is.
func ExampleDecodeError() {
	err := error(&wire.DecodeError{Type: "Shell", Member: "colour", Err: wire.ErrUnknownMember})
	var de *wire.DecodeError
	fmt.Println(err)
	fmt.Println(errors.Is(err, wire.ErrUnknownMember), errors.As(err, &de) && de.Member == "colour")
	// Output:
	// decode Shell.colour: unknown member
	// true true
}

func stringsReader(s string) io.Reader { return strings.NewReader(s) }

// An encode failure says encode, not decode.
func TestNoVariantSaysEncode(t *testing.T) {
	err := wire.NoVariant("ContentBlock")
	if !errors.Is(err, wire.ErrNoVariant) || err.Error() != "encode ContentBlock: union has no variant set" {
		t.Fatalf("NoVariant = %v", err)
	}
	if _, ok := errors.AsType[*wire.DecodeError](err); ok {
		t.Fatal("an encode failure is a DecodeError")
	}
}
