package frames

import (
	"reflect"

	"github.com/bridgekit/bridgekit/runtime/wire"
)

// CheckType decodes body as a value of t, the way the classifier checks a
// frame's params or result in family f, and returns the problem at its
// JSON pointer (prefixed with pointer, the body's own place in the frame)
// when t refuses it. A nil t takes any body.
func CheckType(f Family, t reflect.Type, body []byte, pointer string) (Problem, bool) {
	if t == nil {
		return Problem{}, false
	}
	_, p, bad := check(f, t, body, pointer)
	return p, bad
}

// An Operation is one operation carried inside a method (Harn's host/call
// operations), with the Go types of its arguments and result (nil when
// free-form).
type Operation struct {
	Info   wire.OperationInfo
	Args   reflect.Type
	Result reflect.Type
}

// Operations returns the operations the catalogue of family f carries
// inside method wireName, in catalogue order, with their types from the
// generated handler fields named after them.
func Operations(f Family, wireName string) []Operation {
	c := catalogues[f]
	if c == nil {
		return nil
	}
	fields := map[string]reflect.Type{}
	for _, h := range c.handlers {
		t := reflect.TypeOf(h)
		for i := range t.NumField() {
			if fld := t.Field(i); fld.Type.Kind() == reflect.Func {
				fields[fld.Name] = fld.Type
			}
		}
	}
	var out []Operation
	for _, mi := range c.methods {
		if mi.Wire != wireName {
			continue
		}
		for _, op := range mi.Operations {
			o := Operation{Info: op}
			// An operation's field is func(ctx, *MethodParams, *Args) (Result, error).
			if ft, ok := fields[op.Go]; ok && ft.NumIn() == 3 {
				o.Args = typed(ft.In(2))
				if ft.NumOut() == 2 {
					o.Result = typed(ft.Out(0))
				}
			}
			out = append(out, o)
		}
	}
	return out
}
