package scriptedmodel

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Aliases are the groups of property names that mean the same argument
// in the tools of different agents: an argument given under any name of
// a group fills the property of that group the tool's schema has.
var Aliases = [][]string{
	{"path", "file_path", "filePath", "absolute_path", "filepath", "filename", "file", "target_file"},
	{"content", "contents", "file_text", "text", "new_content"},
	{"command", "cmd", "commandLine"},
	{"old_string", "oldString", "old_text", "oldText"},
	{"new_string", "newString", "new_text", "newText"},
	{"description", "explanation", "summary"},
}

// schemaNode is the part of a JSON Schema Fill reads.
type schemaNode struct {
	Type       jsontext.Value         `json:"type"` // a name, or a list of names
	Properties map[string]*schemaNode `json:"properties"`
	Required   []string               `json:"required"`
	Enum       []jsontext.Value       `json:"enum"`
	Const      jsontext.Value         `json:"const"`
	Default    jsontext.Value         `json:"default"`
	AnyOf      []*schemaNode          `json:"anyOf"`
	OneOf      []*schemaNode          `json:"oneOf"`
}

// types lists the node's type names ("string", ...), of a union's first
// branch when it has no type of its own.
func (n *schemaNode) types() []string {
	var one string
	var many []string
	switch {
	case json.Unmarshal(n.Type, &one) == nil && one != "":
		return []string{one}
	case json.Unmarshal(n.Type, &many) == nil && len(many) > 0:
		return many
	}
	for _, alt := range slices.Concat(n.AnyOf, n.OneOf) {
		if t := alt.types(); len(t) > 0 {
			return t
		}
	}
	return nil
}

// zero is a value n accepts: its const, default, first enum value, or
// the zero of its type (an object with its required properties filled).
func (n *schemaNode) zero() any {
	for _, v := range []jsontext.Value{n.Const, n.Default} {
		if len(v) > 0 {
			return v
		}
	}
	if len(n.Enum) > 0 {
		return n.Enum[0]
	}
	types := n.types()
	if slices.Contains(types, "null") && len(types) > 1 {
		types = slices.DeleteFunc(types, func(t string) bool { return t == "null" })
	}
	switch first(types) {
	case "string":
		return ""
	case "integer", "number":
		return 0
	case "boolean":
		return false
	case "array":
		return []any{}
	case "null":
		return nil
	}
	out := map[string]any{}
	for _, name := range n.Required {
		if p := n.Properties[name]; p != nil {
			out[name] = p.zero()
		}
	}
	return out
}

func first(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}

// Fill returns the arguments of a call to a tool whose argument schema is
// schema (a JSON Schema of an object; nil when the tool gives none) from
// args, given by meaning: each argument fills the property of its name,
// else the property of its Aliases group that the schema has; every other
// required property gets its schema's const, default or first enum value,
// are the zero of its type. An argument the schema has no property for is
// an error (the script and the tool disagree), unless the schema names no
// properties at all; one of optional is then left out. The result's
// members are in name order.
func Fill(schema jsontext.Value, args, optional map[string]any) (jsontext.Value, error) {
	var root schemaNode
	if len(schema) > 0 {
		if err := json.Unmarshal(schema, &root, json.RejectUnknownMembers(false)); err != nil {
			return nil, fmt.Errorf("reading the tool's schema: %w", err)
		}
	}
	out := map[string]any{}
	for _, key := range slices.Sorted(maps.Keys(optional)) {
		if name, ok := property(&root, key); ok && len(root.Properties) > 0 {
			out[name] = optional[key]
		}
	}
	for _, key := range slices.Sorted(maps.Keys(args)) {
		name, ok := property(&root, key)
		if !ok {
			return nil, fmt.Errorf("the schema has no property for %q (it has %s)", key, strings.Join(slices.Sorted(maps.Keys(root.Properties)), ", "))
		}
		out[name] = args[key]
	}
	for _, name := range root.Required {
		if _, set := out[name]; !set {
			if p := root.Properties[name]; p != nil {
				out[name] = p.zero()
			} else {
				out[name] = ""
			}
		}
	}
	return json.Marshal(out, json.Deterministic(true))
}

// property is the schema's property an argument named key fills.
func property(root *schemaNode, key string) (string, bool) {
	if len(root.Properties) == 0 {
		return key, true
	}
	if _, ok := root.Properties[key]; ok {
		return key, true
	}
	for _, group := range Aliases {
		if !slices.Contains(group, key) {
			continue
		}
		for _, name := range group {
			if _, ok := root.Properties[name]; ok {
				return name, true
			}
		}
	}
	return "", false
}
