// Package harn holds the typed bindings of Harn's stdio bridge, both sides:
// the methods a Harn runtime (the VM, `harn serve acp`) sends the program
// that embeds it (host/call and its operations, host/capabilities,
// host/tools/list, builtin_call, skills/*, skill/match, agent/idle,
// _harn/agentEvent, progress, log, ...), and the Harn extension methods a
// host sends the runtime (session/inject, session/remind, the live-session
// methods, session/cancel_tool_call, ...). The types, handler structs
// (HostHandlers, VMHandlers), peers (HostPeer, VMPeer) and method tables are
// generated from spec/catalogue/harn.json; docs/reference/harn.md lists
// every method with its direction, status and errors.
//
// One stream carries more than this package: ACP itself (initialize,
// session/prompt, session/update with Harn's variants,
// session/request_permission, fs/*, terminal/*) is package acp. HostHandler
// and VMHandler compose this package's handlers with ACP's into the one
// rpc.Handler a side serves, and NewBridgeConn starts a connection with both
// protocols' cancel rules and preempted methods:
//
//	conn := harn.NewBridgeConn(r, w, harn.HostHandler(&bridge, &client), nil)
//	agent := acp.NewAgentPeer(conn) // initialize, session/new, session/prompt, ...
//	vm := harn.NewVMPeer(conn)      // session/inject, session/attach, ...
//
// Methods a side does not serve are answered with -32601 and never
// advertised; retired methods have no handler field at all. Harn's vendor
// fields are read only under _meta.harn; ReadLegacySessionUpdate and the
// AcceptLegacy middleware also accept the pre-#904/#905 root-level fields.
package harn
