package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/bridgekit/bridgekit/generator/internal/catalogue"
	"github.com/bridgekit/bridgekit/generator/internal/naming"
)

// scaffoldMain adds a new method to a catalogue: an entry with status
// experimental, and open-object params (and result) schemas appended to one of
// the catalogue's schema files. Run generate afterwards.
func scaffoldMain(args []string) error {
	fs := flag.NewFlagSet("scaffold", flag.ContinueOnError)
	root := fs.String("root", "..", "repository root")
	cat := fs.String("catalogue", "", "catalogue name under spec/catalogue (e.g. harn)")
	wire := fs.String("wire", "", "wire method name (e.g. host/example)")
	goName := fs.String("go", "", "Go name (default: derived from the wire name)")
	from := fs.String("from", "", "sending side")
	to := fs.String("to", "", "receiving side")
	kind := fs.String("kind", "request", "request or notification")
	schemaFile := fs.String("schema", "", "schema file for the new $defs (default: the catalogue's first)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *cat == "" || *wire == "" || *from == "" || *to == "" {
		return fmt.Errorf("scaffold needs -catalogue, -wire, -from and -to")
	}
	if *goName == "" {
		*goName = naming.Go(*wire)
	}
	files, err := Scaffold(*root, *cat, *schemaFile, catalogue.Method{Wire: *wire, Go: *goName, From: *from, To: *to, Kind: catalogue.Kind(*kind)})
	if err != nil {
		return err
	}
	for _, f := range files {
		fmt.Println("updated", f)
	}
	fmt.Println("next: describe the params and result schemas, then run `make generate`")
	return nil
}

// Scaffold adds m to the named catalogue and stub schemas for it, returning the
// files it changed.
func Scaffold(root, catName, schemaFile string, m catalogue.Method) ([]string, error) {
	catPath := filepath.Join(root, "spec", "catalogue", catName+".json")
	c, err := catalogue.Load(catPath)
	if err != nil {
		return nil, err
	}
	if schemaFile == "" {
		schemaFile = c.Schemas[0]
	}
	base := strings.ToLower(strings.Join(naming.Words(m.Wire), "_"))
	defs := map[string]string{base + "_params": "Params of " + m.Wire + "."}
	params := schemaFile + "#/$defs/" + base + "_params"
	m.Params = &params
	if m.Kind != catalogue.Notification && m.Kind != catalogue.Event {
		result := schemaFile + "#/$defs/" + base + "_result"
		m.Result = &result
		defs[base+"_result"] = "Result of " + m.Wire + "."
	}
	m.Errors = []catalogue.Error{}
	m.Status = catalogue.Experimental
	m.Doc = "Describe what " + m.Wire + " does, who sends it and when."
	c.Methods = append(c.Methods, m)
	if err := c.Validate(); err != nil {
		return nil, err
	}
	schemaPath := filepath.Join(root, "spec", "schemas", schemaFile)
	src, err := os.ReadFile(schemaPath)
	if err != nil {
		return nil, err
	}
	for _, name := range []string{base + "_params", base + "_result"} {
		if desc, ok := defs[name]; ok {
			stub := fmt.Sprintf(`{ "description": %q, "type": "object", "additionalProperties": true }`, desc)
			if src, err = appendDef(src, name, stub); err != nil {
				return nil, fmt.Errorf("%s: %w", schemaFile, err)
			}
		}
	}
	out, err := FormatCatalogue(c)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(catPath, out, 0o644); err != nil {
		return nil, err
	}
	if err := os.WriteFile(schemaPath, src, 0o644); err != nil {
		return nil, err
	}
	return []string{catPath, schemaPath}, nil
}

// FormatCatalogue renders a catalogue in the canonical layout that the
// checked-in catalogues use, so scaffolding changes only what it adds.
func FormatCatalogue(c *catalogue.Catalogue) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if c.Written != nil {
		c = c.Written // an extension is written as its file says it, without its base
	}
	if err := enc.Encode(c); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// appendDef inserts "name": def as the last member of the root $defs object,
// leaving the rest of the file byte for byte as it was.
func appendDef(src []byte, name, def string) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(src))
	depth := 0
	inDefs := false
	expectKey := false
	var lastKey string
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("no root $defs object found")
		}
		switch v := tok.(type) {
		case json.Delim:
			switch v {
			case '{', '[':
				depth++
				if v == '{' && depth == 2 && lastKey == "$defs" {
					inDefs = true
				}
			case '}', ']':
				if inDefs && depth == 2 {
					end := int(dec.InputOffset()) - 1 // the closing brace
					body := bytes.TrimRight(src[:end], " \t\r\n")
					sep := ","
					if body[len(body)-1] == '{' {
						sep = ""
					}
					insert := fmt.Sprintf("%s\n    %q: %s\n  ", sep, name, def)
					out := append(append(append([]byte{}, body...), insert...), src[end:]...)
					var check any
					if err := json.Unmarshal(out, &check); err != nil {
						return nil, err
					}
					return out, nil
				}
				depth--
			}
			expectKey = depth >= 1
		case string:
			if depth == 1 && expectKey {
				lastKey = v
				expectKey = false
			} else {
				expectKey = true
			}
			if inDefs && depth == 2 && v == name && expectKey == false {
				return nil, fmt.Errorf("$defs already has %q", name)
			}
		default:
			expectKey = true
		}
	}
}

// formatCatalogues rewrites every catalogue in the canonical layout.
func formatCatalogues(root string) error {
	paths, err := filepath.Glob(filepath.Join(root, "spec", "catalogue", "*.json"))
	if err != nil {
		return err
	}
	for _, p := range paths {
		c, err := catalogue.Load(p)
		if err != nil {
			return err
		}
		out, err := FormatCatalogue(c)
		if err != nil {
			return err
		}
		if err := os.WriteFile(p, out, 0o644); err != nil {
			return err
		}
	}
	return nil
}
