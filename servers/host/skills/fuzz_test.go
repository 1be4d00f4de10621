package skills

import "testing"

// FuzzParseSkill reads any skill file without panicking; a skill it accepts
// has a name.
func FuzzParseSkill(f *testing.F) {
	for _, s := range []string{
		"---\nname: ship\ndescription: Ship it\nallowed_tools: [bash, git]\npaths:\n  - infra/**\n---\n# body\n",
		"---\nname: x\ndescription: >\n  a\n  b\n\n  c\nwhen_to_use: |\n  one\n---\n",
		"# no front matter\n\ntext\n",
		"---\nname: 'it''s'\ntags: [a, \"b\"] # c\n---",
		"---\r\nname: x\r\n---\r\nbody",
		"---\nname: \"\\u00e9\"\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		s, err := Parse("id", text)
		if err == nil && s.Name == "" {
			t.Fatalf("%q: accepted a skill without a name", text)
		}
	})
}
