package inspect

import (
	"testing"

	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/frames"
	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/tracelog"
)

func TestPercentileNearestRank(t *testing.T) {
	var xs []float64
	for i := 1; i <= 100; i++ {
		xs = append(xs, float64(i))
	}
	for _, tc := range []struct{ p, want float64 }{{50, 50}, {99, 99}, {100, 100}, {1, 1}, {0.5, 1}} {
		if got := Percentile(xs, tc.p); got != tc.want {
			t.Errorf("p%v = %v, want %v", tc.p, got, tc.want)
		}
	}
	if got := Percentile([]float64{7}, 99); got != 7 {
		t.Errorf("one value: %v", got)
	}
	if got := Percentile(nil, 50); got != 0 {
		t.Errorf("none: %v", got)
	}
	if got := Percentile([]float64{1, 2, 3}, 50); got != 2 {
		t.Errorf("p50 of three: %v", got)
	}
}

// Latencies groups answered requests by method and the direction of the
// request, counts error replies and the requests never answered.
func TestLatenciesPerMethod(t *testing.T) {
	var recs []*tracelog.Record
	seq := int64(0)
	add := func(dir frames.Direction, kind frames.Kind, method string, replyTo int64, us float64) int64 {
		seq++
		r := &tracelog.Record{Type: tracelog.TypeFrame, Seq: seq, Dir: dir, Kind: kind, Method: method, ReplyTo: replyTo}
		if replyTo != 0 {
			r.LatencyUS = &us
		}
		recs = append(recs, r)
		return seq
	}
	for i := 1; i <= 200; i++ {
		q := add(frames.In, frames.Request, "session/prompt", 0, 0)
		kind := frames.Response
		if i%50 == 0 {
			kind = frames.Error
		}
		add(frames.Out, kind, "session/prompt", q, float64(i*1000))
	}
	q := add(frames.Out, frames.Request, "fs/read_text_file", 0, 0)
	add(frames.In, frames.Response, "fs/read_text_file", q, 250)
	add(frames.Out, frames.Request, "fs/read_text_file", 0, 0) // never answered
	add(frames.Out, frames.Notification, "session/update", 0, 0)
	got := Latencies(recs)
	if len(got) != 2 {
		t.Fatalf("%+v", got)
	}
	fs, sp := got[0], got[1]
	if fs.Method != "fs/read_text_file" || fs.Dir != frames.Out || fs.Count != 1 || fs.Unanswered != 1 || fs.P50US != 250 || fs.P99US != 250 {
		t.Errorf("fs: %+v", fs)
	}
	if sp.Method != "session/prompt" || sp.Dir != frames.In || sp.Count != 200 || sp.Errors != 4 || sp.Unanswered != 0 ||
		sp.P50US != 100000 || sp.P99US != 198000 || sp.MaxUS != 200000 {
		t.Errorf("session/prompt: %+v", sp)
	}
}
