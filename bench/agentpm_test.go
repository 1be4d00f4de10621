package bench

import (
	"testing"
	"time"
)

// The AgentPM scenarios' pieces, small: both framings make correct
// retrieve round trips in memory and to a child, and deliver a burst of
// events.
func TestAgentPMRoundTrips(t *testing.T) {
	for _, f := range framings {
		t.Run(f.rt.Key(), func(t *testing.T) {
			pair := NewPair(f.rt, &Service{})
			l, err := retrieveTrips(pair.Client, LoopConfig{Callers: 1, Warmup: 5, MaxCalls: 50})
			if cerr := pair.Close(time.Second); err == nil {
				err = cerr
			}
			if err != nil || l.N != 50 {
				t.Fatalf("in memory: %v (%d calls)", err, l.N)
			}
			ch, err := StartChild(f.rt, testExe)
			if err != nil {
				t.Fatal(err)
			}
			l, err = retrieveTrips(ch.Conn, LoopConfig{Callers: 1, MaxCalls: 20})
			if cerr := ch.Close(5 * time.Second); err == nil {
				err = cerr
			}
			if err != nil || l.N != 20 {
				t.Fatalf("child: %v (%d calls; stderr %s)", err, l.N, ch.Stderr())
			}
		})
	}
}

func TestAgentPMEventBurst(t *testing.T) {
	for _, f := range framings {
		r, err := eventBurst(f.rt.envelope, 2000, 10*time.Second)
		if err != nil || r.Seen != 2000 || r.Sent != 2000 {
			t.Fatalf("%s: %+v %v", f.rt.Key(), r, err)
		}
	}
	env, rpc, err := EventFrameSizes()
	if err != nil || env < 400 || rpc < 400 {
		t.Fatalf("frame sizes %d %d: %v", env, rpc, err)
	}
	t.Logf("harness_event frame: %d bytes as an envelope, %d as a JSON-RPC notification", env, rpc)
}

// The envelope scenarios are in the catalogue, flagged as such.
func TestAgentPMScenarios(t *testing.T) {
	for _, name := range []string{"agentpm-rt-inmem", "agentpm-rt-child", "agentpm-burst-inmem"} {
		sc, err := LookupScenario(name)
		if err != nil || !sc.Envelope || sc.Codec {
			t.Fatalf("%s: %+v %v", name, sc, err)
		}
	}
}
