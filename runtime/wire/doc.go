// Package wire holds the hand-written machinery that bridgekit's generated
// types share, so that each generated type stays a few lines of code:
//
//   - ObjectReader, the decode loop of every object: it reads member names,
//     tracks required members, and for unions streams the members into the
//     variant a tag or a distinguishing member chooses, in one pass,
//     buffering only the members that arrive before that choice. Generated
//     code adds a switch on the member name that decodes each value with
//     Field, Ptr, NullPtr, NullField, Opt, OptValue or Const.
//   - ObjectWriter, a writer with a sticky error: Put, PutPtr, PutOpt, ...
//     write one member each.
//   - Readers and Writers of values (StringFrom, ListFrom, ..., StringTo,
//     ListTo, ...), Limits for schema constraints, and the enum helpers.
//   - The types users meet: Extras (unknown members of open objects, kept in
//     order), Nullable (absent, null and a value kept apart), and typed decode
//     errors (DecodeError, errors.Is(err, ErrUnknownMember), ...).
//
// Decoding is reflection-free and allocates only for what the result holds
// (strings, slices, optional members, raw JSON).
package wire
