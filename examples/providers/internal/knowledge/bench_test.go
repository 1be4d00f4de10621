package knowledge

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// corpus writes files Markdown files of sections sections each, drawn from
// a Zipf-distributed vocabulary like natural text.
func corpus(b *testing.B, files, sections int) string {
	r := rand.New(rand.NewPCG(7, 11))
	vocab := make([]string, 5000)
	for i := range vocab {
		vocab[i] = fmt.Sprintf("w%dx", i)
	}
	zipf := rand.NewZipf(r, 1.1, 1, uint64(len(vocab)-1))
	m := map[string]string{}
	for f := range files {
		var sb strings.Builder
		fmt.Fprintf(&sb, "# Document %d\n\n", f)
		for s := range sections {
			fmt.Fprintf(&sb, "## Section %d\n\n", s)
			for range 3 {
				for w := range 40 {
					if w > 0 {
						sb.WriteByte(' ')
					}
					sb.WriteString(vocab[zipf.Uint64()])
				}
				sb.WriteString("\n\n")
			}
		}
		m[fmt.Sprintf("d%03d/f%d.md", f/50, f)] = sb.String()
	}
	return writeTree(b, m)
}

// BenchmarkOpen indexes 200 files (2,000 sections, 6,000 paragraphs).
func BenchmarkOpen(b *testing.B) {
	dir := corpus(b, 200, 10)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Open(context.Background(), dir, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReopenFromCache restarts on an unchanged folder with a cache.
func BenchmarkReopenFromCache(b *testing.B) {
	dir := corpus(b, 200, 10)
	cache := b.TempDir() + "/index.cache"
	if _, err := Open(context.Background(), dir, Options{CachePath: cache}); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Open(context.Background(), dir, Options{CachePath: cache}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSearch(b *testing.B) {
	dir := corpus(b, 200, 10)
	ix, err := Open(context.Background(), dir, Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("%+v", ix.Stats())
	for _, q := range []struct{ name, text string }{
		{"rare", "w4000x w4500x"},
		{"mixed", "w3x w150x w2000x"},
		{"common", "w0x w1x w2x w3x"},
	} {
		b.Run(q.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := ix.Search(context.Background(), Query{Text: q.text, TopK: 10}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
