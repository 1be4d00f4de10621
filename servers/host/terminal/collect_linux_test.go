package terminal

import (
	"bytes"
	"os"
	"testing"
)

// TestReadFromAcrossBlocks: reading a pipe straight into a ring keeps
// what Write would have, across blocks and the ring's end.
func TestReadFromAcrossBlocks(t *testing.T) {
	data := make([]byte, 5*ringBlock+321)
	for i := range data {
		data[i] = byte('a' + i%26)
	}
	for _, limit := range []int{1000, ringBlock, 2*ringBlock + 7} {
		for _, piece := range []int{999, ringBlock + 3, readBytes} {
			pr, pw, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			rc, err := pr.SyscallConn()
			if err != nil {
				t.Fatal(err)
			}
			r, model := newRing(limit), newRing(limit)
			for rest := data; len(rest) > 0; {
				n := min(piece, len(rest))
				chunk, wrote := rest[:n], make(chan struct{})
				go func() { _, _ = pw.Write(chunk); close(wrote) }()
				for got := 0; got < n; {
					var m int
					if err := rc.Read(func(fd uintptr) bool {
						m, err = r.readFrom(int(fd), piece-got)
						return m > 0 || err == nil
					}); err != nil {
						t.Fatal(err)
					}
					got += m
				}
				<-wrote
				model.Write(chunk)
				rest = rest[n:]
			}
			pr.Close()
			pw.Close()
			s, tr := r.read()
			w, wtr := model.read()
			if s != w || tr != wtr || r.total != int64(len(data)) || !bytes.HasSuffix(data, []byte(s)) {
				t.Fatalf("limit %d, pieces of %d: read %d bytes (truncated %v), want %d (%v)", limit, piece, len(s), tr, len(w), wtr)
			}
		}
	}
}
