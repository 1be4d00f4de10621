package wire_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/bridgekit/bridgekit/runtime/wire"
)

// call holds kind as a Nullable although its schema does not admit null
// (OptValue and PutOptValue), as generated code does for a member whose
// representation follows a nullable member of another type.
type call struct {
	Kind  wire.Nullable[string]
	Tags  wire.Nullable[[]string]
	Extra wire.Extras
}

var (
	objCall      = wire.Object{Type: "call"}
	readStrings  = wire.ListFrom(wire.StringFrom)
	writeStrings = wire.ListTo(wire.StringTo)
)

func (x *call) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	*x = call{}
	r := wire.ReadObject(dec, &objCall)
	for r.Next() {
		switch string(r.Name()) {
		case "kind":
			r.Done(wire.OptValue(&r, &x.Kind, wire.StringFrom))
		case "tags":
			r.Done(wire.OptValue(&r, &x.Tags, readStrings))
		default:
			r.Done(r.Extra(&x.Extra))
		}
	}
	return r.End()
}

func (x call) MarshalJSONTo(enc *jsontext.Encoder) error {
	w := wire.WriteObject(enc)
	wire.PutOptValue(&w, "call", "kind", x.Kind, wire.StringTo)
	wire.PutOptValue(&w, "call", "tags", x.Tags, writeStrings)
	w.Extras(x.Extra)
	return w.End()
}

func TestOptValueKeepsAbsentAndValueAndRefusesNull(t *testing.T) {
	for _, in := range []string{`{}`, `{"kind":"read"}`, `{"kind":""}`, `{"tags":[]}`, `{"kind":"k","tags":["a","b"]}`, `{"kind":"k","other":null}`} {
		c, err := decode[call](t, in)
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		if c.Kind.IsNull() || c.Tags.IsNull() {
			t.Fatalf("%s: decoded a null", in)
		}
		if _, ok := c.Kind.Get(); ok != strings.Contains(in, "kind") {
			t.Fatalf("%s: kind present %v", in, ok)
		}
		if tags, ok := c.Tags.Get(); ok && tags == nil {
			t.Fatalf("%s: [] decoded as a nil slice", in)
		}
		out, err := json.Marshal(c)
		if err != nil || string(out) != in {
			t.Fatalf("%s re-encoded as %s (%v)", in, out, err)
		}
	}
	for in, ptr := range map[string]string{`{"kind":null}`: "/kind", `{"kind":"k","tags":null}`: "/tags"} {
		_, err := decode[call](t, in)
		var de *wire.DecodeError
		if !errors.Is(err, wire.ErrNullValue) || !errors.As(err, &de) || de.Type != "call" || wire.Pointer(err) != ptr {
			t.Fatalf("%s: got %v (pointer %q), want null refused at %s", in, err, wire.Pointer(err), ptr)
		}
	}
	for _, c := range []call{{Kind: wire.Null[string]()}, {Kind: wire.Some("k"), Tags: wire.Null[[]string]()}} {
		out, err := json.Marshal(c)
		var ee *wire.EncodeError
		if !errors.Is(err, wire.ErrNullValue) || !errors.As(err, &ee) || !strings.HasPrefix(ee.Type, "call.") {
			t.Fatalf("%+v: encoded as %s (%v), want ErrNullValue", c, out, err)
		}
	}
}
