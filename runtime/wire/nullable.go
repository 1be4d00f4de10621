package wire

// Nullable holds an optional member that may also be null, keeping the three
// wire states apart: absent (the zero value), null, and a value. A member
// whose schema does not admit null may still be held as a Nullable, so that
// it shares one Go type with the same member of a type where null is
// allowed (ACP's ToolCall.Kind and ToolCallUpdate.Kind); its decoder then
// never produces null and its encoder refuses it (OptValue, PutOptValue).
type Nullable[T any] struct {
	value T
	state uint8 // 0 absent, 1 null, 2 value
}

// Null returns a Nullable that encodes as JSON null.
func Null[T any]() Nullable[T] { return Nullable[T]{state: 1} }

// Some returns a Nullable holding v.
func Some[T any](v T) Nullable[T] { return Nullable[T]{value: v, state: 2} }

// IsAbsent reports whether the member was absent (and will be omitted).
func (n Nullable[T]) IsAbsent() bool { return n.state == 0 }

// IsNull reports whether the member was present and null.
func (n Nullable[T]) IsNull() bool { return n.state == 1 }

// Get returns the value and whether there is one.
func (n Nullable[T]) Get() (T, bool) { return n.value, n.state == 2 }
