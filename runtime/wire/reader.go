package wire

import (
	"bytes"
	"errors"
	"io"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Object describes a generated object type to the shared decode loop.
type Object struct {
	// Type is the Go type name, for errors.
	Type string
	// Required lists the required members in schema order (at most 64).
	Required []string
}

// Union describes a generated union of objects to the shared decode loop:
// which member (Tag) or which members (Variant.Keys) choose the variant, and
// which variant is chosen when nothing else is.
type Union struct {
	// Type is the Go type name, for errors.
	Type string
	// Tag is the member whose string value selects a variant, or "".
	Tag string
	// Common describes members every variant shares (nil if none).
	Common *Object
	// Variants in schema order; generated member switches use their index.
	Variants []Variant
}

// Variant is one alternative of a Union.
type Variant struct {
	// Tag is the value of Union.Tag that selects this variant ("" for none).
	Tag string
	// Keys are members only this variant has; seeing one selects it.
	Keys []string
	// Default marks the variant chosen when the object ends without a tag
	// or key that selects another.
	Default bool
	// Object describes the variant's own members.
	Object *Object
	// Nested: the variant is a union of its own (Object is nil). Once the
	// tag chooses it, the generated code keeps the members the union's
	// Common does not name (ObjectReader.Keep) and decodes them, without
	// the tag, into the inner union at the end (ObjectReader.EndNested).
	Nested bool
	// NullTag: a null tag chooses this variant (the default), which then
	// gets the tag member like any other.
	NullTag bool
}

// Reader states.
const (
	stChoice  = 1 << iota // a variant was just chosen; report it once
	stClosed              // the main decoder's '}' has been read
	stPending             // a member read from the main decoder waits behind the replay
	stDecided             // the union's variant (or Unknown) is settled
)

// ObjectReader decodes one JSON object member by member for generated code.
// It reads names, tracks required members, and, for unions, streams the
// members into the variant chosen by a tag or by a member that only one
// variant has, buffering only the members that arrive before that choice.
//
// Generated UnmarshalJSONFrom methods drive it as
//
//	r := wire.ReadObject(dec, &objT)
//	for r.Next() {
//		r.Done(x.member(&r))
//	}
//	return r.End()
//
// where member is a switch on r.Name() that decodes one value with the
// helpers Field, Ptr, NullPtr, NullField, Opt and Const, and falls back to
// r.Extra (open objects) or r.Unknown (closed ones).
type ObjectReader struct {
	dec     *jsontext.Decoder // the caller's decoder
	cur     *jsontext.Decoder // where the current member's value is read
	replay  *jsontext.Decoder // buffered members, replayed once a variant is chosen
	obj     *Object
	union   *Union
	vobj    *Object
	variant int
	state   uint8
	seen    uint64
	vseen   uint64
	err     error
	nlen    int // length of the current name in nbuf; -1: none (a choice); nlong: heap copy of a long name
	nlong   []byte
	nbuf    [48]byte
	plen    int // the pending member's name, like nlen/nlong/nbuf
	plong   []byte
	pbuf    [48]byte
	buf     []byte // members read before the choice, as `{"name":value,...`
	unknown []byte
	utag    string // the tag of unknown, kept when the decode applies a contract
	kept    []byte // a nested variant's members, as `{"name":value,...` (Keep)
	array   bool   // the union chooses by the first element of an array
}

// ReadObject starts decoding an object described by obj.
func ReadObject(dec *jsontext.Decoder, obj *Object) ObjectReader {
	r := ObjectReader{dec: dec, cur: dec, obj: obj, variant: -1}
	r.begin(obj.Type)
	return r
}

// ReadUnion starts decoding a union of objects described by u.
func ReadUnion(dec *jsontext.Decoder, u *Union) ObjectReader {
	r := ObjectReader{dec: dec, cur: dec, obj: u.Common, union: u, variant: -1}
	r.begin(u.Type)
	if r.err == nil {
		r.chooseImmediately()
	}
	return r
}

// ReadFirstElement starts decoding a union of arrays whose variants are told
// apart by their elements: it reads '[' and then the first element as a union
// of the element types described by u. An empty array selects variant 0 and
// Next reports nothing. After the loop, the rest of the array is read with
// RestOf.
func ReadFirstElement(dec *jsontext.Decoder, u *Union) ObjectReader {
	r := ObjectReader{dec: dec, cur: dec, obj: u.Common, union: u, variant: -1, array: true}
	if err := expect(dec, '['); err != nil {
		r.err = Wrap(u.Type, "", err)
		return r
	}
	if _, err := dec.ReadToken(); err != nil {
		r.err = Wrap(u.Type, "", err)
		return r
	}
	if dec.PeekKind() == ']' {
		r.variant = 0
		r.state = stClosed | stDecided
		return r
	}
	r.begin(u.Type)
	if r.err == nil {
		r.chooseImmediately()
	}
	return r
}

func (r *ObjectReader) begin(typ string) {
	if err := BeginObject(r.dec, typ); err != nil {
		r.err = err
	}
}

// chooseImmediately picks a union's only way out: a default variant when no
// tag or key could select another one.
func (r *ObjectReader) chooseImmediately() {
	u := r.union
	if u.Tag != "" {
		return
	}
	def := -1
	for i, v := range u.Variants {
		if len(v.Keys) > 0 {
			return
		}
		if v.Default {
			def = i
		}
	}
	if def >= 0 {
		r.choose(def)
	}
}

// Name is the current member's name, unquoted. It is nil when Next reports
// the choice of a union variant rather than a member; Extra and Unknown then
// do nothing, so a member switch needs no case for it.
func (r *ObjectReader) Name() []byte {
	switch {
	case r.nlen < 0:
		return nil
	case r.nlong != nil:
		return r.nlong
	}
	return r.nbuf[:r.nlen]
}

// setName copies name into r (names are short; a long one goes to the heap).
func (r *ObjectReader) setName(name []byte) {
	r.nlen, r.nlong = copy(r.nbuf[:], name), nil
	if len(name) > len(r.nbuf) {
		r.nlong = bytes.Clone(name)
	}
}

// Variant is the index of the chosen union variant, or -1.
func (r *ObjectReader) Variant() int { return r.variant }

// Decoder is the decoder the current member's value must be read from.
func (r *ObjectReader) Decoder() *jsontext.Decoder { return r.cur }

// Next advances to the next member (or, once, to the choice of a union
// variant) and reports whether there is one. It returns false at the end of
// the object or after an error; End reports which.
func (r *ObjectReader) Next() bool {
	for r.err == nil {
		if r.state&stChoice != 0 {
			r.state &^= stChoice
			r.nlen, r.nlong = -1, nil
			return true
		}
		if r.replay != nil {
			if r.replay.PeekKind() != '}' {
				if _, ok := r.readName(r.replay); !ok {
					return false
				}
				r.cur = r.replay
				r.mark()
				return true
			}
			r.replay, r.cur = nil, r.dec
		}
		if r.state&stPending != 0 {
			r.state &^= stPending
			if r.plong != nil {
				r.setName(r.plong)
			} else {
				r.setName(r.pbuf[:r.plen])
			}
			r.mark()
			return true
		}
		if r.state&stClosed != 0 {
			return false
		}
		if r.dec.PeekKind() == '}' {
			if _, err := r.dec.ReadToken(); err != nil {
				r.fail("", err)
				return false
			}
			r.state |= stClosed
			if r.union != nil && r.state&stDecided == 0 {
				r.chooseAtEnd()
			}
			if r.unknown != nil {
				r.unknown = append(r.unknown, '}')
			}
			continue
		}
		raw, ok := r.readName(r.dec)
		if !ok {
			return false
		}
		if r.union == nil || r.state&stDecided != 0 && r.unknown == nil {
			r.mark()
			return true
		}
		if r.unknown != nil {
			r.unknown = r.bufferName(r.unknown, raw)
			r.keepValue(&r.unknown)
			continue
		}
		r.undecided(raw)
	}
	return false
}

// undecided handles a member of a union whose variant is not chosen yet.
// raw is the member's quoted name as it arrived.
func (r *ObjectReader) undecided(raw []byte) {
	u := r.union
	name := r.Name()
	if u.Tag != "" && string(name) == u.Tag {
		var rawName []byte
		if bytes.IndexByte(raw, '\\') >= 0 {
			rawName = bytes.Clone(raw) // kept for Unknown; raw dies with the next read
		}
		k := r.dec.PeekKind()
		v, err := r.dec.ReadValue()
		if err != nil {
			r.fail(u.Tag, err)
			return
		}
		if k == 'n' {
			for i, vr := range u.Variants {
				if vr.NullTag {
					// The member is the default variant's: replayed into it.
					r.buf = r.bufferName(r.buf, rawName)
					r.buf = append(r.buf, v...)
					r.choose(i)
					return
				}
			}
		}
		if k != '"' {
			r.fail(u.Tag, kindErr("string", k))
			return
		}
		tag := v[1 : len(v)-1]
		if bytes.IndexByte(tag, '\\') >= 0 {
			tag, _ = jsontext.AppendUnquote(nil, v)
		}
		for i, vr := range u.Variants {
			if vr.Tag != "" && vr.Tag == string(tag) {
				r.choose(i)
				return
			}
		}
		// A tag this version does not know: keep the whole object verbatim
		// (a contract's dialect may know it: see EndUnion).
		if c := contractOf(r.dec); c != nil && len(c.variants) > 0 {
			r.utag = string(tag)
		}
		r.unknown = r.bufferName(r.buf, rawName)
		r.unknown = append(r.unknown, v...)
		r.buf = nil
		r.state |= stDecided
		return
	}
	for i, vr := range u.Variants {
		for _, k := range vr.Keys {
			if k == string(name) {
				r.plen, r.plong = copy(r.pbuf[:], name), nil
				if len(name) > len(r.pbuf) {
					r.plong = bytes.Clone(name)
				}
				r.state |= stPending
				r.choose(i)
				return
			}
		}
	}
	r.buf = r.bufferName(r.buf, raw)
	r.keepValue(&r.buf)
}

// bufferName appends `{` or `,`, then the member's quoted name (raw, or
// rebuilt from Name when raw is nil) and ':' to dst.
func (r *ObjectReader) bufferName(dst, raw []byte) []byte {
	if len(dst) == 0 {
		dst = append(dst, '{')
	} else {
		dst = append(dst, ',')
	}
	if raw == nil {
		dst = append(append(append(dst, '"'), r.Name()...), '"')
	} else {
		dst = append(dst, raw...)
	}
	return append(dst, ':')
}

// keepValue appends the next value of the main decoder to *dst verbatim.
func (r *ObjectReader) keepValue(dst *[]byte) {
	v, err := r.dec.ReadValue()
	if err != nil {
		r.fail(string(r.Name()), err)
		return
	}
	*dst = append(*dst, v...)
}

// choose selects variant i and arranges for the buffered members to be
// replayed into it.
func (r *ObjectReader) choose(i int) {
	r.variant = i
	r.vobj = r.union.Variants[i].Object
	r.state |= stChoice | stDecided
	if r.vobj != nil && r.union.Tag != "" {
		// A variant that names the tag member itself sees it as present:
		// the union consumed it.
		for b, n := range r.vobj.Required {
			if n == r.union.Tag {
				r.vseen |= 1 << b
			}
		}
	}
	if len(r.buf) > 0 {
		r.buf = append(r.buf, '}')
		r.replay = jsontext.NewDecoder(bytes.NewReader(r.buf), carryUnmarshalers(r.dec)...)
		r.buf = nil
		if _, err := r.replay.ReadToken(); err != nil {
			r.fail("", err)
		}
	}
}

// chooseAtEnd settles a union whose object ended before anything selected a
// variant: the default variant, or a missing-member error.
func (r *ObjectReader) chooseAtEnd() {
	u := r.union
	for i, v := range u.Variants {
		if v.Default {
			r.choose(i)
			return
		}
	}
	member := u.Tag
	if member == "" {
		var keys []string
		for _, v := range u.Variants {
			keys = append(keys, v.Keys...)
		}
		member = strings.Join(keys, " or ")
	}
	r.err = &DecodeError{Type: u.Type, Member: member, Err: ErrMissingMember}
}

// readName reads a member name from dec into r (see Name) and returns it quoted,
// as it arrived (valid until the next read from dec).
func (r *ObjectReader) readName(dec *jsontext.Decoder) ([]byte, bool) {
	v, err := dec.ReadValue()
	if err != nil {
		r.fail("", err)
		return nil, false
	}
	if bytes.IndexByte(v, '\\') < 0 {
		r.setName(v[1 : len(v)-1])
		return v, true
	}
	name, err := jsontext.AppendUnquote(nil, v)
	if err != nil {
		r.fail("", err)
		return nil, false
	}
	r.setName(name)
	return v, true
}

// mark records the current member as seen if it is a required one.
func (r *ObjectReader) mark() {
	name := r.Name()
	if r.obj != nil {
		for i, n := range r.obj.Required {
			if n == string(name) {
				r.seen |= 1 << i
			}
		}
	}
	if r.vobj != nil {
		for i, n := range r.vobj.Required {
			if n == string(name) {
				r.vseen |= 1 << i
			}
		}
	}
}

func (r *ObjectReader) typ() string {
	switch {
	case r.vobj != nil:
		return r.vobj.Type
	case r.union != nil:
		return r.union.Type
	}
	return r.obj.Type
}

func (r *ObjectReader) fail(member string, err error) {
	if r.err == nil {
		r.err = Wrap(r.typ(), member, err)
	}
}

// Done records the outcome of decoding the current member's value, naming
// the type and member in an error that does not name them yet.
func (r *ObjectReader) Done(err error) {
	if err != nil && r.err == nil {
		r.err = Wrap(r.typ(), string(r.Name()), err)
	}
}

// Extra keeps the current member in x: the member of an open object that its
// schema does not name. A member that the contract the decode applies
// forbids in this type (Contract) is rejected with ErrForbiddenMember.
func (r *ObjectReader) Extra(x *Extras) error {
	if r.nlen < 0 {
		return nil
	}
	if c := contractOf(r.dec); c != nil && c.forbids(r.typ(), r.Name()) {
		return ErrForbiddenMember
	}
	n := string(r.Name())
	v, err := r.cur.ReadValue()
	if err != nil {
		return err
	}
	*x = append(*x, Member{Name: n, Value: bytes.Clone(v)})
	return nil
}

// Unknown rejects the current member: a closed object does not allow it.
func (r *ObjectReader) Unknown() error {
	if r.nlen < 0 {
		return nil
	}
	return ErrUnknownMember
}

// Forbidden rejects the current member: the schema forbids it here, even
// in an open object.
func (r *ObjectReader) Forbidden() error {
	if r.nlen < 0 {
		return nil
	}
	return ErrForbiddenMember
}

// End reports the first error, or the first required member that was absent.
func (r *ObjectReader) End() error {
	if r.err != nil {
		return r.err
	}
	if err := missing(r.obj, r.seen); err != nil {
		return err
	}
	return missing(r.vobj, r.vseen)
}

// EndUnion is End for unions: an object whose tag names no known variant is
// stored, verbatim, in *unknown.
// Under a contract that adds variants of that tag to the union
// (Contract.Extend), the object must also decode as the dialect's variant.
func (r *ObjectReader) EndUnion(unknown *jsontext.Value) error {
	if r.err == nil && r.unknown != nil {
		if r.utag != "" {
			if err := contractOf(r.dec).checkVariant(r.union.Type, r.utag, r.unknown, r.dec.StackPointer()); err != nil {
				return err
			}
		}
		*unknown = r.unknown
		return nil
	}
	return r.End()
}

func missing(o *Object, seen uint64) error {
	if o == nil {
		return nil
	}
	for i, n := range o.Required {
		if seen&(1<<i) == 0 {
			return &DecodeError{Type: o.Type, Member: n, Err: ErrMissingMember}
		}
	}
	return nil
}

// RestOf finishes a union of arrays started with ReadFirstElement: it checks
// the first element, then reads the remaining elements into *p with elem.
// *p is never nil afterwards, so [] and absent stay apart.
func RestOf[E any](r *ObjectReader, p *[]E, elem Reader[E]) error {
	if err := r.End(); err != nil {
		return err
	}
	if *p == nil {
		*p = make([]E, 0, 4)
	}
	for r.dec.PeekKind() != ']' {
		var zero E
		*p = append(*p, zero)
		if err := elem(&(*p)[len(*p)-1], r.dec); err != nil {
			return Wrap(r.union.Type, "", &elementError{len(*p) - 1, err})
		}
	}
	_, err := r.dec.ReadToken()
	return Wrap(r.union.Type, "", err)
}

// First returns the first element of *p, appending a zero one if *p is empty:
// the element a union of arrays decodes while choosing its variant.
func First[E any](p *[]E) *E {
	if len(*p) == 0 {
		*p = append(make([]E, 0, 4), *new(E))
	}
	return &(*p)[0]
}

// Keep keeps the current member, verbatim, for the nested variant the
// union chose (Variant.Nested): EndNested decodes what Keep kept.
func (r *ObjectReader) Keep() error {
	if r.nlen < 0 {
		return nil
	}
	if len(r.kept) == 0 {
		r.kept = append(r.kept, '{')
	} else {
		r.kept = append(r.kept, ',')
	}
	var err error
	if r.kept, err = jsontext.AppendQuote(r.kept, r.Name()); err != nil {
		return err
	}
	r.kept = append(r.kept, ':')
	v, err := r.cur.ReadValue()
	if err != nil {
		return err
	}
	r.kept = append(r.kept, v...)
	return nil
}

// EndNested is End for a union whose tag chose a nested variant: it then
// decodes the members Keep kept (the object without its tag and the
// members of the union's Common) into v, the inner union, with the
// decoder's contract. An error's JSON pointer is the union's.
func (r *ObjectReader) EndNested(v json.UnmarshalerFrom) error {
	if err := r.End(); err != nil {
		return err
	}
	if len(r.kept) == 0 {
		r.kept = append(r.kept, '{')
	}
	r.kept = append(r.kept, '}')
	dec := jsontext.NewDecoder(bytes.NewReader(r.kept), carryUnmarshalers(r.dec)...)
	err := v.UnmarshalJSONFrom(dec)
	if err == nil {
		_, err = dec.ReadToken() // nothing may follow
		if err == io.EOF {
			return nil
		}
		if err == nil {
			err = ErrWrongKind
		}
	}
	if se, ok := errors.AsType[*json.SemanticError](err); ok {
		out := *se
		out.JSONPointer = r.dec.StackPointer() + se.JSONPointer
		out.ByteOffset = 0
		return &out
	}
	return err
}

// New returns *p, allocating it first if it is nil: the variant a union
// decodes its members into.
func New[E any](p **E) *E {
	if *p == nil {
		*p = new(E)
	}
	return *p
}

// Field decodes the current member's value into *p.
func Field[E any](r *ObjectReader, p *E, read Reader[E]) error { return read(p, r.cur) }

// Ptr decodes the current member's value into a new E stored in *p: an
// optional member, nil when absent.
func Ptr[E any](r *ObjectReader, p **E, read Reader[E]) error {
	v := new(E)
	*p = v
	return read(v, r.cur)
}

// NullPtr is Ptr for a member that may be null: null leaves *p nil.
func NullPtr[E any](r *ObjectReader, p **E, read Reader[E]) error {
	if ok, err := r.null(); ok || err != nil {
		*p = nil
		return err
	}
	return Ptr(r, p, read)
}

// NullField is Field for a nil-able value (slice, map, raw JSON) that may be
// null: null leaves *p nil.
func NullField[E any](r *ObjectReader, p *E, read Reader[E]) error {
	if ok, err := r.null(); ok || err != nil {
		return err
	}
	return read(p, r.cur)
}

// Opt decodes an optional member that may be null, keeping absent, null and
// a value apart.
func Opt[E any](r *ObjectReader, p *Nullable[E], read Reader[E]) error {
	if ok, err := r.null(); ok || err != nil {
		*p = Null[E]()
		return err
	}
	p.state = 2
	return read(&p.value, r.cur)
}

// OptValue decodes an optional member held as a Nullable whose schema does
// not admit null (its representation follows a nullable member of another
// type): null fails as read fails on it, with ErrNullValue for the
// generated readers, so the Nullable is either absent or a value.
func OptValue[E any](r *ObjectReader, p *Nullable[E], read Reader[E]) error {
	p.state = 2
	return read(&p.value, r.cur)
}

// Const checks a member whose value the schema fixes.
func Const[E comparable](r *ObjectReader, want E, read Reader[E]) error {
	var v E
	if err := read(&v, r.cur); err != nil {
		return err
	}
	if v != want {
		return errorf(ErrConstraint, "%v, want %v", v, want)
	}
	return nil
}

func (r *ObjectReader) null() (bool, error) {
	if r.cur.PeekKind() != 'n' {
		return false, nil
	}
	_, err := r.cur.ReadToken()
	return true, err
}

// OptConst decodes an optional member whose value the schema fixes: *p is
// set to want when it is present and equal, nil when absent.
func OptConst[E comparable](r *ObjectReader, p **E, want E, read Reader[E]) error {
	if err := Const(r, want, read); err != nil {
		return err
	}
	v := want
	*p = &v
	return nil
}
