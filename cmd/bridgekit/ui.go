package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/inspect"
)

// uiMemory bounds what `trace --ui` keeps of a session for the inspector.
const uiMemory = 128 << 20

func checkListenAddr(addr string, remote bool) error { return inspect.CheckAddr(addr, remote) }

// serveUI serves the inspector over src on addr until Close.
type uiServer struct {
	srv *http.Server
	ln  net.Listener
	*inspect.Memory
}

func listenUI(env *Env, addr string, src inspect.Source, remote bool) (*http.Server, net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, err
	}
	srv := &http.Server{Handler: inspect.NewHandler(src, inspectOptions(!remote)), ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	fmt.Fprintf(env.Stderr, "bridgekit: inspector on http://%s/\n", ln.Addr())
	return srv, ln, nil
}

func startLiveUI(env *Env, addr string, remote bool) (*uiServer, error) {
	mem := inspect.NewMemory(uiMemory)
	srv, ln, err := listenUI(env, addr, mem, remote)
	if err != nil {
		return nil, err
	}
	return &uiServer{srv: srv, ln: ln, Memory: mem}, nil
}

func (u *uiServer) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := u.srv.Shutdown(ctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return nil
}
