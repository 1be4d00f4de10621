package main

import (
	"errors"
	"github.com/bridgekit/bridgekit/internal/testio"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/bridgekit/bridgekit/runtime/rpc"
	"github.com/bridgekit/bridgekit/servers/host/permission"
	"github.com/bridgekit/bridgekit/servers/host/shells"
	"github.com/bridgekit/bridgekit/servers/host/skills"
	"github.com/bridgekit/bridgekit/servers/host/terminal"
	"github.com/bridgekit/bridgekit/servers/host/workspace"
)

// testShellID is the shell testApp configures: /bin/sh.
const testShellID = "test-sh"

// testApp is an app on a temporary workspace, rendering into a buffer.
func testApp(t *testing.T, pol *policy) (*app, *syncBuffer) {
	t.Helper()
	ws, err := workspace.Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	terms := terminal.New(nil)
	t.Cleanup(func() { terms.Close(5 * time.Second) })
	if pol == nil {
		pol = &policy{}
	}
	out := &syncBuffer{}
	r := newRenderer(out, false)
	t.Cleanup(func() { r.close(0) })
	skillSet, _ := skills.Load("")
	// The machine's shells, after one configured for the tests.
	provider, err := shells.New(shells.Config{Shells: []shells.Configured{{ID: testShellID, Path: "/bin/sh"}}})
	if err != nil {
		t.Fatal(err)
	}
	a := &app{ws: ws, files: newFiles(ws, pol, r), terms: terms, policy: pol, tracker: permission.NewTracker(nil), skills: skillSet, render: r, shells: provider, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	a.term = newTerm(terms, a.files, pol, provider, r)
	a.perms = a.newPerms()
	return a, out
}

// syncBuffer is a buffer the renderer's goroutine writes while a test reads.
type syncBuffer = testio.Buffer

// rendered closes the app's renderer and returns everything it wrote.
func rendered(a *app, out *syncBuffer) string {
	a.render.close(5 * time.Second)
	return out.String()
}

// rpcCode is the JSON-RPC code of a handler's error, 0 for none.
func rpcCode(err error) int64 {
	var e *rpc.Error
	if errors.As(err, &e) {
		return e.Code
	}
	if err != nil {
		return -1
	}
	return 0
}
