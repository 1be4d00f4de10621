package tokenize

import (
	"slices"
	"strings"
	"testing"
)

func TestTokens(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		opt  Options
		want []string
	}{
		{"empty", "", Options{}, nil},
		{"separators only", " \t\n-_./,;", Options{}, nil},
		{"lower-cased words", "Hello, World!", Options{}, []string{"hello", "world"}},
		{"underscore and dash split", "top_k top-k top.k", Options{}, []string{"top", "k", "top", "k", "top", "k"}},
		{"camel case whole and parts", "KnowledgeRuntime", Options{}, []string{"knowledgeruntime", "knowledge", "runtime"}},
		{"capital run", "HTTPServer", Options{}, []string{"httpserver", "http", "server"}},
		{"letters and digits", "utf8 sha256", Options{}, []string{"utf8", "utf", "8", "sha256", "sha", "256"}},
		{"accents kept", "Café naïve", Options{}, []string{"café", "naïve"}},
		{"ideographs one each", "検索エンジン", Options{}, []string{"検", "索", "エ", "ン", "ジ", "ン"}},
		{"stop words dropped", "the index of a corpus", Options{StopWords: true}, []string{"index", "corpus"}},
		{"stemming", "queries chunks indexes class status analysis", Options{Stem: true}, []string{"query", "chunk", "indexe", "class", "status", "analysis"}},
		{"min length keeps digits", "a 7 go", Options{MinLen: 2}, []string{"7", "go"}},
		{"search options", "How does the Harness route Knowledge queries?", Search, []string{"harness", "route", "knowledge", "query"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Tokens(tc.in, tc.opt); !slices.Equal(got, tc.want) {
				t.Fatalf("Tokens(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestLongTermsAreCut(t *testing.T) {
	long := strings.Repeat("é", 100) // 200 bytes
	got := Tokens(long, Options{})
	if len(got) != 1 || len(got[0]) > MaxTermBytes || !strings.HasPrefix(long, got[0]) {
		t.Fatalf("got %q", got)
	}
}

func TestInvalidUTF8(t *testing.T) {
	got := Tokens("ok\xffbad", Options{})
	if !slices.Equal(got, []string{"ok", "bad"}) {
		t.Fatalf("got %q", got)
	}
}

func TestStem(t *testing.T) {
	for in, want := range map[string]string{
		"flies": "fly", "cookies": "cooky", "eies": "eie", "series": "sery",
		"horses": "horse", "toes": "toe", "bees": "bee",
		"cats": "cat", "bus": "bus", "pass": "pass", "is": "is", "s": "s",
	} {
		if got := Stem(in); got != want {
			t.Errorf("Stem(%q) = %q, want %q", in, got, want)
		}
	}
}

func FuzzTokens(f *testing.F) {
	f.Add("KnowledgeRuntime top_k 検索 \xff")
	f.Fuzz(func(t *testing.T, s string) {
		for _, tok := range Tokens(s, Search) {
			if tok == "" || len(tok) > MaxTermBytes {
				t.Fatalf("bad term %q from %q", tok, s)
			}
		}
	})
}
