// Package embedding is a deterministic, dependency-free text embedder for
// the example embedding provider: it maps a text to a fixed-length,
// L2-normalised vector of float64 by feature hashing ("the hashing trick",
// Weinberger et al. 2009) of the text's words, word bigrams and character
// n-grams.
//
// # What it is
//
//   - Lexical: two texts are close when they share words, word pairs or
//     pieces of words. Character n-grams of each word (with its boundaries,
//     "<route>" gives "<ro", "rou", ..., "te>") make inflections and
//     compound identifiers land near each other ("routing" and "routes",
//     "KnowledgeRuntime" and "knowledge runtime").
//   - Deterministic: the same text, configuration and package version give
//     bit-for-bit the same vector on every platform and in every process
//     (FNV-1a with a fixed 64-bit finaliser; no random seeds, no maps
//     iterated, no fused multiply-adds), so vectors can be stored and
//     compared later. The
//     algorithm is pinned by a golden test; changing it must change
//     Model.
//   - Cheap: no model files, no network, a few microseconds per sentence,
//     safe for concurrent use.
//
// # What it is not
//
// It is not a neural model and has no notion of meaning beyond spelling:
// "car" and "automobile" are unrelated to it, and it does not know that
// "not good" is the opposite of "good". Its cosine similarities are
// useful for ranking texts by shared vocabulary, near-duplicate detection
// and tests that need real, stable vectors; they are not comparable with
// those of any other model, and they should not be presented as semantic
// understanding.
//
// # Features and weights
//
// Text is cut by package tokenize (lower-cased, camelCase parts, English
// stop words dropped; a text of stop words only keeps them). Each word
// contributes its stemmed form with weight 1, each pair of adjacent words
// contributes weight 0.5, and the character n-grams of each word share a
// total weight of 1 among themselves, so long words do not outweigh short
// ones. Each feature is hashed to a bucket and a sign (signed hashing keeps
// collisions unbiased); the vector is then scaled to unit length. A text
// with no letters or digits uses the character n-grams of its trimmed
// text, and the empty text a single reserved feature, so every text has a
// unit vector.
package embedding

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"unicode/utf8"

	"github.com/bridgekit/bridgekit/examples/providers/internal/tokenize"
)

// Defaults applied by New to zero Config fields.
const (
	DefaultDimensions = 256
	DefaultProvider   = "bridgekit"
	DefaultModel      = "hashed-ngrams-v1"
	// MaxDimensions bounds Config.Dimensions.
	MaxDimensions = 1 << 16
)

// Errors. Every error returned by this package matches one of them with
// errors.Is.
var (
	// ErrInvalidConfig: a Config field is out of range.
	ErrInvalidConfig = errors.New("embedding: invalid configuration")
	// ErrSpaceMismatch: a request names an embedding space (provider,
	// model, dimensions, normalisation) other than the encoder's. The
	// protocol's code for it is embedding_space_mismatch.
	ErrSpaceMismatch = errors.New("embedding: space mismatch")
	// ErrDimensionMismatch: two vectors of different lengths were compared.
	ErrDimensionMismatch = errors.New("embedding: vectors of different dimensions")
)

// Config selects the encoder's space. The zero value is the default
// encoder: 256 dimensions, word unigrams and bigrams, character 3- to
// 5-grams.
type Config struct {
	// Dimensions is the vector length, 1 to MaxDimensions (default 256).
	Dimensions int
	// Provider and Model name the space in capability advertisements
	// (defaults DefaultProvider and DefaultModel).
	Provider, Model string
	// CharNGramMin and CharNGramMax bound the character n-gram lengths
	// (defaults 3 and 5). NoCharNGrams turns them off.
	CharNGramMin, CharNGramMax int
	NoCharNGrams               bool
	// NoBigrams turns the word-bigram features off.
	NoBigrams bool
}

// Space describes the vectors an Encoder produces, in the terms of an
// embedding provider's capability advertisement (embedding_spaces).
type Space struct {
	ID         string // always "default"
	Provider   string
	Model      string
	Dimensions int
	Normalized bool   // always true
	Metric     string // always "cosine"
}

// Encoder embeds texts. It is immutable and safe for concurrent use.
type Encoder struct {
	space              Space
	charMin, charMax   int
	bigrams, charGrams bool
}

// New returns an encoder for cfg.
func New(cfg Config) (*Encoder, error) {
	e := &Encoder{
		space: Space{ID: "default", Provider: cfg.Provider, Model: cfg.Model, Dimensions: cfg.Dimensions,
			Normalized: true, Metric: "cosine"},
		charMin: cfg.CharNGramMin, charMax: cfg.CharNGramMax,
		bigrams: !cfg.NoBigrams, charGrams: !cfg.NoCharNGrams,
	}
	if e.space.Dimensions == 0 {
		e.space.Dimensions = DefaultDimensions
	}
	if e.space.Provider == "" {
		e.space.Provider = DefaultProvider
	}
	if e.space.Model == "" {
		e.space.Model = DefaultModel
	}
	if e.charMin == 0 {
		e.charMin = 3
	}
	if e.charMax == 0 {
		e.charMax = max(5, e.charMin)
	}
	switch {
	case e.space.Dimensions < 1 || e.space.Dimensions > MaxDimensions:
		return nil, fmt.Errorf("%w: dimensions %d outside 1..%d", ErrInvalidConfig, e.space.Dimensions, MaxDimensions)
	case e.charMin < 1 || e.charMax < e.charMin || e.charMax > 16:
		return nil, fmt.Errorf("%w: character n-grams %d..%d (want 1 <= min <= max <= 16)", ErrInvalidConfig, e.charMin, e.charMax)
	}
	return e, nil
}

// Space returns the space the encoder's vectors belong to.
func (e *Encoder) Space() Space { return e.space }

// Dimensions returns the length of every vector the encoder returns.
func (e *Encoder) Dimensions() int { return e.space.Dimensions }

// Check reports whether a request for vectors of the given space can be
// served by this encoder; if not, the error matches ErrSpaceMismatch and
// says which field differs. An empty provider or model in the request
// matches any.
func (e *Encoder) Check(provider, model string, dimensions int, normalized bool) error {
	s := e.space
	switch {
	case provider != "" && provider != s.Provider:
		return fmt.Errorf("%w: provider %q, this encoder is %q", ErrSpaceMismatch, provider, s.Provider)
	case model != "" && model != s.Model:
		return fmt.Errorf("%w: model %q, this encoder is %q", ErrSpaceMismatch, model, s.Model)
	case dimensions != s.Dimensions:
		return fmt.Errorf("%w: %d dimensions requested, this encoder has %d", ErrSpaceMismatch, dimensions, s.Dimensions)
	case !normalized:
		// Normalised vectors are also valid unnormalised ones, but a
		// caller asking for raw magnitudes expects something else.
		return fmt.Errorf("%w: unnormalised vectors requested, this encoder's are unit length", ErrSpaceMismatch)
	}
	return nil
}

// Embed returns the unit vector of text.
func (e *Encoder) Embed(text string) []float64 {
	v := make([]float64, e.space.Dimensions)
	e.accumulate(v, text)
	normalize(v)
	return v
}

// EmbedBatch embeds every text, in order. It stops with ctx's error when
// ctx ends before it has finished.
func (e *Encoder) EmbedBatch(ctx context.Context, texts []string) ([][]float64, error) {
	out := make([][]float64, len(texts))
	// One backing array for the whole batch: one allocation instead of
	// one per text.
	backing := make([]float64, len(texts)*e.space.Dimensions)
	for i, t := range texts {
		if i%64 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		v := backing[i*e.space.Dimensions : (i+1)*e.space.Dimensions : (i+1)*e.space.Dimensions]
		e.accumulate(v, t)
		normalize(v)
		out[i] = v
	}
	return out, nil
}

// Similarity returns the cosine similarity of the embeddings of a and b.
func (e *Encoder) Similarity(a, b string) float64 {
	s, _ := Cosine(e.Embed(a), e.Embed(b))
	return s
}

// Feature tags keep the kinds of feature apart in hash space.
const (
	tagWord   = 'w'
	tagBigram = 'b'
	tagChar   = 'c'
	tagRaw    = 'r'
	tagEmpty  = 'e'
)

// wordOptions cuts text into words for features: stop words dropped (they
// carry little about what a text is about), not stemmed (the character
// n-grams see the whole word; the word feature stems it).
var wordOptions = tokenize.Options{StopWords: true}

func (e *Encoder) accumulate(v []float64, text string) {
	var prev string
	words := 0
	each := func(w string) {
		words++
		stem := tokenize.Stem(w)
		e.add(v, hashFeature(tagWord, stem, ""), 1)
		if e.bigrams && prev != "" {
			e.add(v, hashFeature(tagBigram, prev, stem), 0.5)
		}
		prev = stem
		if e.charGrams {
			e.addCharGrams(v, w)
		}
	}
	tokenize.Each(text, wordOptions, each)
	if words == 0 {
		// Only stop words (or none at all): keep them rather than embed
		// "to be or not to be" as nothing.
		tokenize.Each(text, tokenize.Options{}, each)
	}
	if words > 0 {
		return
	}
	if trimmed := strings.Join(strings.Fields(text), " "); trimmed != "" {
		// No letters or digits ("?!", emoji): the text's own characters.
		if e.charGrams {
			e.addCharGrams(v, trimmed)
		} else {
			e.add(v, hashFeature(tagRaw, trimmed, ""), 1)
		}
		return
	}
	e.add(v, hashFeature(tagEmpty, "", ""), 1)
}

// addCharGrams adds the character n-grams of "<w>", sharing a total
// weight of 1.
func (e *Encoder) addCharGrams(v []float64, w string) {
	// Rune start offsets of "<" + w + ">", computed without building it.
	var offs [66]int // enough for MaxTermBytes-long words; longer text falls back below
	runes := utf8.RuneCountInString(w) + 2
	var bounds []int
	if runes+1 <= len(offs) {
		bounds = offs[:0]
	} else {
		bounds = make([]int, 0, runes+1)
	}
	bounds = append(bounds, 0)
	for i := range w {
		bounds = append(bounds, 1+i)
	}
	bounds = append(bounds, 1+len(w), 2+len(w))
	count := 0
	for n := e.charMin; n <= e.charMax; n++ {
		if runes >= n {
			count += runes - n + 1
		}
	}
	if count == 0 {
		// Shorter than the smallest n-gram: the bounded word itself.
		e.add(v, hashFeature(tagChar, "<"+w+">", ""), 1)
		return
	}
	weight := 1 / float64(count)
	for n := e.charMin; n <= e.charMax; n++ {
		for i := 0; i+n < len(bounds); i++ {
			e.add(v, hashBounded(w, bounds[i], bounds[i+n]), weight)
		}
	}
}

func (e *Encoder) add(v []float64, h uint64, weight float64) {
	i := h % uint64(len(v))
	if h>>63 == 1 {
		weight = -weight
	}
	v[i] += weight
}

const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

// hashFeature hashes tag, a, 0x1f, b with FNV-1a and finalises it.
func hashFeature(tag byte, a, b string) uint64 {
	h := uint64(fnvOffset)
	h = (h ^ uint64(tag)) * fnvPrime
	for i := 0; i < len(a); i++ {
		h = (h ^ uint64(a[i])) * fnvPrime
	}
	h = (h ^ 0x1f) * fnvPrime
	for i := 0; i < len(b); i++ {
		h = (h ^ uint64(b[i])) * fnvPrime
	}
	return mix(h)
}

// hashBounded hashes the bytes [from, to) of "<" + w + ">" as a character
// n-gram feature, without building the string.
func hashBounded(w string, from, to int) uint64 {
	h := uint64(fnvOffset)
	h = (h ^ tagChar) * fnvPrime
	for p := from; p < to; p++ {
		var c byte
		switch {
		case p == 0:
			c = '<'
		case p == len(w)+1:
			c = '>'
		default:
			c = w[p-1]
		}
		h = (h ^ uint64(c)) * fnvPrime
	}
	h = (h ^ 0x1f) * fnvPrime
	return mix(h)
}

// mix is the MurmurHash3 64-bit finaliser: it spreads FNV's weak high bits
// so that the bucket (low bits) and the sign (top bit) are independent.
func mix(h uint64) uint64 {
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return h
}

func normalize(v []float64) {
	var sum float64
	for _, x := range v {
		sum += float64(x * x) // the conversion forbids FMA fusion: same bits on every platform
	}
	if sum == 0 {
		// Every feature cancelled out in its bucket (possible only with
		// tiny dimensions): fall back to the first axis, a unit vector.
		v[0] = 1
		return
	}
	inv := 1 / math.Sqrt(sum)
	for i := range v {
		v[i] *= inv
	}
}

// Cosine returns the cosine similarity of a and b, in [-1, 1]; 0 when
// either is the zero vector. Vectors of different lengths are an error
// matching ErrDimensionMismatch.
func Cosine(a, b []float64) (float64, error) {
	if len(a) != len(b) {
		return 0, fmt.Errorf("%w: %d and %d", ErrDimensionMismatch, len(a), len(b))
	}
	var dot, na, nb float64
	for i := range a {
		dot += a[i] * b[i]
		na += a[i] * a[i]
		nb += b[i] * b[i]
	}
	if na == 0 || nb == 0 {
		return 0, nil
	}
	return max(-1, min(1, dot/(math.Sqrt(na)*math.Sqrt(nb)))), nil
}

// Norm returns the L2 norm of v.
func Norm(v []float64) float64 {
	var sum float64
	for _, x := range v {
		sum += x * x
	}
	return math.Sqrt(sum)
}
