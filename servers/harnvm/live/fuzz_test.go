package live_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/bridgekit/bridgekit/servers/harnvm/live"
)

// checkInvariants: at most one controller, and the active controller id
// names exactly it.
func checkInvariants(ch live.Change) error {
	ctrl := ""
	seen := map[string]bool{}
	for _, c := range ch.Clients {
		if seen[c.ID] {
			return fmt.Errorf("client %q listed twice", c.ID)
		}
		seen[c.ID] = true
		if c.Mode == live.Controller {
			if ctrl != "" {
				return fmt.Errorf("two controllers: %q and %q", ctrl, c.ID)
			}
			ctrl = c.ID
		}
		if c.LastSeenAt.Before(c.AttachedAt) {
			return fmt.Errorf("client %q last seen before it attached", c.ID)
		}
	}
	if ctrl != ch.ActiveControllerID {
		return fmt.Errorf("active controller %q, controller-mode client %q", ch.ActiveControllerID, ctrl)
	}
	return nil
}

var ids = []string{"tui", "portal", "cli", "ide"}

// apply runs one operation chosen by op on r and checks its own
// postconditions; the invariants are checked by OnChange.
// With concurrent set, checks that depend on no other goroutine acting in
// between are skipped.
func apply(t testing.TB, r *live.Registry, clk *clock, concurrent bool, op, who, arg byte) {
	id := ids[int(who)%len(ids)]
	before := r.Clients()
	switch op % 9 {
	case 0, 1, 2:
		req := live.AttachRequest{ClientID: id}
		if op%9 > 0 {
			req.Mode = live.Controller
			req.Takeover = op%9 == 2
		}
		ch, err := r.Attach(req)
		if errors.Is(err, live.ErrControllerConflict) {
			if req.Takeover {
				t.Errorf("takeover refused: %v", err)
			}
			if after := r.Clients(); !concurrent && !reflect.DeepEqual(stripTimes(after), stripTimes(before)) {
				t.Errorf("refused attach changed state")
			}
			return
		}
		if err != nil {
			t.Error(err)
		}
		if req.Mode == live.Controller && ch.ActiveControllerID != id {
			t.Errorf("controller attach: active %q", ch.ActiveControllerID)
		}
	case 3:
		if ch, err := r.Takeover(id, nil); err != nil || ch.ActiveControllerID != id {
			t.Errorf("takeover: %+v %v", ch, err)
		}
	case 4:
		ch, err := r.Detach(id, "", nil)
		if err != nil {
			if !errors.Is(err, live.ErrNotAttached) {
				t.Error(err)
			}
			return
		}
		for _, c := range ch.Clients {
			if c.ID == id {
				t.Error("detached client still listed")
			}
		}
	case 5:
		if _, err := r.Heartbeat(id, nil); err != nil && !errors.Is(err, live.ErrNotAttached) {
			t.Error(err)
		}
	case 6:
		clk.Add(time.Duration(arg%40) * time.Second)
	case 7:
		r.Sweep()
	case 8:
		c, err := r.Authorize(id, live.PromptInjection)
		ctrl, ok := r.Controller()
		if err == nil && !concurrent && (!ok || ctrl.ID != id || c.ID != id) {
			t.Errorf("authorized %q, controller %q", id, ctrl.ID)
		}
	}
}

func stripTimes(cs []live.Client) []live.Client {
	out := make([]live.Client, len(cs))
	for i, c := range cs {
		c.LastSeenAt, c.AttachedAt = time.Time{}, time.Time{}
		out[i] = c
	}
	return out
}

// FuzzRegistry runs random operation sequences: never two controllers,
// and each operation's postconditions hold.
func FuzzRegistry(f *testing.F) {
	f.Add([]byte{1, 0, 0, 1, 1, 0, 2, 1, 0, 4, 1, 0, 6, 0, 35, 7, 0, 0, 3, 2, 0, 8, 2, 0})
	f.Add([]byte{0, 0, 0, 0, 1, 0, 1, 2, 0, 5, 0, 0, 6, 0, 39, 1, 3, 0})
	f.Fuzz(func(t *testing.T, prog []byte) {
		clk := newClock()
		var broken error
		r := live.New(&live.Options{Now: clk.Now, Expiry: 30 * time.Second, OnChange: func(ch live.Change) {
			if err := checkInvariants(ch); err != nil && broken == nil {
				broken = err
			}
		}})
		for i := 0; i+2 < len(prog); i += 3 {
			apply(t, r, clk, false, prog[i], prog[i+1], prog[i+2])
			if broken != nil || t.Failed() {
				t.Fatal(broken)
			}
		}
	})
}

// Concurrent operations from many goroutines never produce two controllers.
func TestConcurrentNeverTwoControllers(t *testing.T) {
	clk := newClock()
	var mu sync.Mutex
	var broken error
	r := live.New(&live.Options{Now: clk.Now, Expiry: 30 * time.Second, OnChange: func(ch live.Change) {
		if err := checkInvariants(ch); err != nil {
			mu.Lock()
			broken = err
			mu.Unlock()
		}
	}})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 7))
			for range 2000 {
				apply(t, r, clk, true, byte(rng.IntN(9)), byte(rng.IntN(4)), byte(rng.IntN(40)))
			}
		}()
	}
	wg.Wait()
	if broken != nil {
		t.Fatal(broken)
	}
}
