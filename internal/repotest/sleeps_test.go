package repotest

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"io/fs"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// allowedSleeps are the time.Sleep calls of runtime/'s tests, by file, enclosing function and argument,
// once per call: each is part of what a test feeds the code under test (a slow handler, a peer that stalls),
// never a wait for something to happen, which a test does on an event (a channel, a hook, or
// testing/synctest's bubble). TestRuntimeSleeps fails on a sleep missing here, and on an entry that matches
// no sleep.
var allowedSleeps = []string{
	// A fault peer (a child process) that never reads: it sleeps until the test kills it.
	"runtime/rpc/fault_test.go runFaultPeer time.Minute",
	// Handlers that take a while, so that requests and notifications queue up behind them.
	"runtime/rpc/barrier_test.go TestCallWaitsForNotificationsBeforeItsResponse 200 * time.Microsecond",
	"runtime/rpc/bounds_test.go TestNotificationBurstDeliveredOverOSPipe time.Millisecond",
	"runtime/rpc/dispatch_test.go TestRequestsHandledOneAtATimeByDefault time.Millisecond",
	"runtime/rpc/hooks_test.go TestOrderedRequests time.Millisecond",
	"runtime/rpc/observe_test.go TestObserverSeesEveryFrameOnceInOrder 2 * time.Millisecond",
	"runtime/rpc/shutdown_test.go TestEOFAnswersEveryRequest 100 * time.Microsecond",
	"runtime/rpc/shutdown_test.go TestQueueAfterPeerEOF 100 * time.Microsecond",
	"runtime/rpc/shutdown_test.go TestBarrierHoldsAcrossPeerEOF time.Millisecond",
	"runtime/rpc/notify_test.go TestNotificationBurstOrder 2 * time.Millisecond",
	// Handlers that linger after their context ends: Close must wait for them.
	"runtime/rpc/shutdown_test.go TestCloseCancelsAndWaitsForHandlers 20 * time.Millisecond",
	"runtime/rpc/shutdown_test.go TestCloseWithBlockedRead 10 * time.Millisecond",
	// Connections closed at varied moments while calls pour in.
	"runtime/rpc/shutdown_test.go TestCloseWhileRequestsArrive time.Duration(i%10) * 100 * time.Microsecond",
	// synctest's clock moved on by the time three pings take.
	"runtime/remote/keepalive_test.go TestKeepalive 100 * time.Second",
}

// TestRuntimeSleeps keeps runtime/'s tests free of sleeps that wait for something to happen (issue 30):
// every time.Sleep call must be listed in allowedSleeps.
func TestRuntimeSleeps(t *testing.T) {
	var found []string
	err := filepath.WalkDir("../../runtime", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return err
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		timeName := ""
		for _, imp := range f.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); p == "time" {
				timeName = "time"
				if imp.Name != nil {
					timeName = imp.Name.Name
				}
			}
		}
		if timeName == "" {
			return nil
		}
		rel := strings.TrimPrefix(filepath.ToSlash(path), "../../")
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok {
				continue
			}
			ast.Inspect(fn, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				sel, ok := call.Fun.(*ast.SelectorExpr)
				if !ok || sel.Sel.Name != "Sleep" {
					return true
				}
				if x, ok := sel.X.(*ast.Ident); !ok || x.Name != timeName {
					return true
				}
				var arg bytes.Buffer
				for _, a := range call.Args {
					printer.Fprint(&arg, fset, a)
				}
				found = append(found, fmt.Sprintf("%s %s %s", rel, fn.Name.Name, arg.String()))
				return true
			})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(found) == 0 {
		t.Fatal("no time.Sleep found at all: is the tree where the test thinks?")
	}
	count := map[string]int{}
	for _, s := range found {
		count[s]++
	}
	for _, s := range allowedSleeps {
		count[s]--
	}
	for _, s := range slices.Sorted(maps.Keys(count)) {
		switch n := count[s]; {
		case n > 0:
			t.Errorf("%d time.Sleep not in allowedSleeps: %s\n\twait on an event instead (a channel, a hook, testing/synctest); list it only if it is part of the test's input", n, s)
		case n < 0:
			t.Errorf("allowedSleeps lists %s %d times more than tests call it", s, -n)
		}
	}
}
