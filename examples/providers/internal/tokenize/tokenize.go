// Package tokenize turns text into the terms that the example providers'
// engines index and compare: the BM25 index of the knowledge provider, the
// feature-hashing embedder and the memory store's full-text mode all use
// it, so a query and the text it is matched against are always cut the
// same way.
//
// A term is a run of letters and digits, lower-cased (Unicode simple case
// folding through unicode.ToLower). Everything else separates terms,
// including '_', '-', '.', and '/', so "top_k", "top-k" and "top.k" all give
// "top" and "k". An identifier written in camelCase or PascalCase gives the
// whole identifier and also its parts ("KnowledgeRuntime" gives
// "knowledgeruntime", "knowledge", "runtime"), so both spellings find it.
// Han, Hiragana and Katakana characters, which are written without spaces,
// are one term each.
//
// With Options.Stem, English plurals are folded by the S-stemmer (Harman,
// 1991): "queries" -> "query", "indexes" -> "indexe", "chunks" -> "chunk",
// leaving "-ss" and "-us" words alone and, unlike the original rules, "-is"
// words too ("analysis"). It is deliberately light: it
// never merges words of different meaning the way an aggressive stemmer
// can. With Options.StopWords, a short list of English function words is
// dropped (see IsStopWord). Terms longer than MaxTermBytes are cut to that
// length at a rune boundary.
package tokenize

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxTermBytes bounds a term's length in bytes; longer runs (base64 blobs,
// hashes) are cut, so a pathological input cannot make a huge term.
const MaxTermBytes = 64

// Options selects the normalisations applied after splitting.
type Options struct {
	// Stem folds English plurals with the S-stemmer.
	Stem bool
	// StopWords drops English function words ("the", "of", ...).
	StopWords bool
	// MinLen drops terms shorter than this many runes, except terms made
	// only of digits and single ideographs. Zero keeps every term.
	MinLen int
}

// Search is the normalisation used for ranked retrieval: stemmed, without
// stop words, terms of two runes or more.
var Search = Options{Stem: true, StopWords: true, MinLen: 2}

// Tokens returns the terms of s in order of appearance, duplicates kept.
func Tokens(s string, opt Options) []string {
	var out []string
	Each(s, opt, func(t string) { out = append(out, t) })
	return out
}

// Each calls fn with every term of s in order of appearance, without
// collecting them.
func Each(s string, opt Options, fn func(string)) {
	var wordBuf [48]rune
	var lowerBuf [MaxTermBytes * 2]byte
	word := wordBuf[:0]
	emit := func(runes []rune) {
		lower := lowerBuf[:0]
		for _, r := range runes {
			lower = utf8.AppendRune(lower, unicode.ToLower(r))
		}
		if len(lower) > MaxTermBytes {
			lower = lower[:cutAt(lower)]
		}
		if len(lower) == 0 {
			return
		}
		if opt.StopWords && stopWords[string(lower)] { // no allocation: map lookup by converted key
			return
		}
		if opt.MinLen > 1 && len(runes) < opt.MinLen && !allDigits(runes) && !isIdeograph(runes[0]) {
			return
		}
		t := string(lower)
		if opt.Stem {
			t = Stem(t)
		}
		fn(t)
	}
	flush := func() {
		if len(word) == 0 {
			return
		}
		emit(word)
		if _, more := nextPart(word, 0); more {
			for from := 0; from < len(word); {
				end, _ := nextPart(word, from)
				emit(word[from:end])
				from = end
			}
		}
		word = word[:0]
	}
	for _, r := range s {
		switch {
		case isIdeograph(r):
			flush()
			emit([]rune{r})
		case unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r):
			word = append(word, r)
		default:
			flush()
		}
	}
	flush()
}

// nextPart returns the end of the identifier part of w that starts at
// from, and whether another part follows. Parts split at lower-to-upper and
// letter-to-digit boundaries, and before the last capital of a capital run
// followed by a lower-case letter ("HTTPServer" -> "HTTP", "Server").
func nextPart(w []rune, from int) (end int, more bool) {
	for i := from + 1; i < len(w); i++ {
		prev, cur := w[i-1], w[i]
		switch {
		case unicode.IsLower(prev) && unicode.IsUpper(cur),
			unicode.IsUpper(prev) && unicode.IsUpper(cur) && i+1 < len(w) && unicode.IsLower(w[i+1]),
			unicode.IsLetter(prev) && unicode.IsDigit(cur), unicode.IsDigit(prev) && unicode.IsLetter(cur):
			return i, true
		}
	}
	return len(w), false
}

// Stem applies the S-stemmer to a lower-case term.
func Stem(t string) string {
	n := len(t)
	switch {
	case n > 4 && strings.HasSuffix(t, "ies") && !strings.HasSuffix(t, "eies") && !strings.HasSuffix(t, "aies"):
		return t[:n-3] + "y"
	case n > 3 && strings.HasSuffix(t, "es") && !strings.HasSuffix(t, "aes") && !strings.HasSuffix(t, "ees") && !strings.HasSuffix(t, "oes"):
		return t[:n-1]
	case n > 3 && strings.HasSuffix(t, "s") && !strings.HasSuffix(t, "us") && !strings.HasSuffix(t, "ss") && !strings.HasSuffix(t, "is"):
		return t[:n-1]
	}
	return t
}

// IsStopWord reports whether t (lower case) is on the stop-word list.
func IsStopWord(t string) bool { return stopWords[t] }

var stopWords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`a an and are as at be but by can did do does for from has have he her his how i if in
		into is it its me my no not of on or our she so than that the their them then there these they this
		those to us was we were what when where which who why will with you your`) {
		m[w] = true
	}
	return m
}()

func isIdeograph(r rune) bool {
	return unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana)
}

func allDigits(rs []rune) bool {
	for _, r := range rs {
		if !unicode.IsDigit(r) {
			return false
		}
	}
	return len(rs) > 0
}

// cutAt returns the largest rune boundary of b at or below MaxTermBytes.
func cutAt(b []byte) int {
	cut := MaxTermBytes
	for cut > 0 && !utf8.RuneStart(b[cut]) {
		cut--
	}
	return cut
}
