package envelope_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/bridgekit/bridgekit/runtime/envelope"
	"github.com/bridgekit/bridgekit/runtime/wire/wiretest"
)

// Frames quoted in ../shared/seeds/004_3ba54f5d2d8bad19.txt and the
// reference catalogues (machine.md §2, service.md §2).
var machineFrames = []string{
	`{"protocol":"agentpm-harness-machine","version":1,"kind":"request","id":"req-1","method":"start_run","payload":{"input":"Summarize the incident."}}`,
	`{"protocol":"agentpm-harness-machine","version":1,"kind":"event","method":"preflight","payload":{"status":"ready","report":{}}}`,
	`{"protocol":"agentpm-harness-machine","version":1,"kind":"response","id":"req-1","payload":{"status":"success","output":null}}`,
	`{"protocol":"agentpm-harness-machine","version":1,"kind":"error","id":"req-2","payload":null,"error":{"code":"session_busy","message":"a Run is active"}}`,
}

var serviceFrames = []string{
	`{"protocol":"agentpm-service","version":1,"kind":"request","id":"req-123","service":"knowledge","method":"retrieve","payload":{}}`,
	`{"protocol":"agentpm-service","version":1,"kind":"response","id":"req-123","service":"knowledge","result":{}}`,
	`{"protocol":"agentpm-service","version":1,"kind":"initialized","id":"knowledge-kb-1","service":"knowledge","result":{"role":"knowledge","protocol_version":1,"ready":true}}`,
	`{"protocol":"agentpm-service","version":1,"kind":"error","id":"memory-m-4","service":"memory","error":{"code":"conflict","message":"stale revision","retryable":true},"vendor":{"kept":[1]}}`,
}

func TestRoundTripExact(t *testing.T) {
	for _, tc := range []struct {
		p      envelope.Protocol
		frames []string
	}{{envelope.Machine, machineFrames}, {envelope.Service, serviceFrames}} {
		for _, in := range tc.frames {
			f, err := tc.p.Decode([]byte(in))
			if err != nil {
				t.Fatalf("%s: %v", in, err)
			}
			out, err := tc.p.Append(nil, f)
			if err != nil || string(out) != in+"\n" {
				t.Fatalf("round trip\n in: %s\nout: %s (%v)", in, out, err)
			}
		}
	}
}

func TestGates(t *testing.T) {
	for _, tc := range []struct {
		in     string
		want   error
		wantID string
	}{
		{`{"protocol":"agentpm-service","version":1,"kind":"request","id":"x"}`, envelope.ErrProtocol, "x"},
		{`{"protocol":"agentpm-harness-machine","version":2,"kind":"request","id":"y"}`, envelope.ErrVersion, "y"},
		{`{"protocol":"agentpm-harness-machine","version":1,"kind":"initialize","id":"z"}`, envelope.ErrKind, "z"},
		{`{"protocol":"agentpm-harness-machine","version":1,"kind":"request","id":7}`, envelope.ErrMalformed, ""},
		{`{"protocol":"agentpm-harness-machine","version":1.5,"kind":"request"}`, envelope.ErrMalformed, ""},
		{`{"protocol":"agentpm-harness-machine","kind":"request","id":"w"}`, envelope.ErrMalformed, "w"},
		{`{"protocol":"agentpm-harness-machine","version":1,"kind":"request"} {}`, envelope.ErrMalformed, ""},
		{`not json`, envelope.ErrMalformed, ""},
		{`{"protocol":"agentpm-harness-machine","version":1,"kind":"request","id":"a","id":"b"}`, envelope.ErrMalformed, "a"},
	} {
		_, err := envelope.Machine.Decode([]byte(tc.in))
		var e *envelope.Error
		if !errors.Is(err, tc.want) || !errors.As(err, &e) {
			t.Errorf("%s: got %v, want %v", tc.in, err, tc.want)
			continue
		}
		got := ""
		if e.ID != nil {
			got = *e.ID
		}
		if got != tc.wantID {
			t.Errorf("%s: error carries id %q, want %q", tc.in, got, tc.wantID)
		}
	}
}

func FuzzMachineFrame(f *testing.F) { fuzzFrames(f, envelope.Machine, machineFrames) }
func FuzzServiceFrame(f *testing.F) { fuzzFrames(f, envelope.Service, serviceFrames) }

// fuzzFrames: a frame that decodes re-encodes to one line that decodes to the
// same frame, and encoding is stable.
func fuzzFrames(f *testing.F, p envelope.Protocol, seeds []string) {
	wiretest.Seed[struct{}](f)
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		fr, err := p.Decode(line)
		if err != nil {
			return
		}
		out, err := p.Append(nil, fr)
		if err != nil {
			t.Fatalf("decoded %q but cannot encode: %v", line, err)
		}
		again, err := p.Decode(out)
		if err != nil {
			t.Fatalf("re-encoded frame does not decode: %v\n%s", err, out)
		}
		out2, _ := p.Append(nil, again)
		if string(out) != string(out2) {
			t.Fatalf("encoding not stable:\n%s%s", out, out2)
		}
	})
}

// Decode checks the compatibility gates; a failure still names the frame's
// id so the reply can echo it.
func ExampleProtocol_Decode() {
	_, err := envelope.Machine.Decode([]byte(`{"protocol":"agentpm-harness-machine","version":2,"kind":"request","id":"c-1","method":"initialize","payload":{}}`))
	var e *envelope.Error
	if errors.As(err, &e) {
		fmt.Println(errors.Is(err, envelope.ErrVersion), *e.ID)
	}
	// Output: true c-1
}
