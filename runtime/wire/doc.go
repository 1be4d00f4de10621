// Package wire holds the small, hand-written helpers that bridgekit's generated
// types use to read and write JSON exactly as the protocols put it on the wire:
// strict objects that reject unknown members, open objects that keep them
// (Extras), values that distinguish absent from null (Nullable), and typed
// decode errors that name the type and member at fault (DecodeError).
//
// Generated code calls these helpers; host authors meet them as field types
// (Extras, Nullable) and as errors (errors.Is(err, wire.ErrUnknownMember)).
package wire
