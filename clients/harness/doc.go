// Package harness drives AgentPM's Harness from Go: it starts `agentpm
// harness --machine` (or speaks over streams it is given), reads the
// startup preflight event and offers the machine protocol's requests as
// typed methods: Initialize, RegisterHostService, Preflight, StartRun,
// CancelRun, MemoryOperation and Shutdown.
//
//	c, err := harness.Start(ctx, &harness.Options{Agent: "@acme/triage", StateDir: ".agentpm-state"})
//	...
//	init, err := c.Initialize(ctx)
//	_, err = c.RegisterHostService(ctx, harness.HostService{
//		Role: agentpmservice.ServiceRoleModel, RegistryID: "default",
//		Handlers: &agentpmservice.ServiceHandlers{Generate: myModel},
//	})
//	res, err := c.StartRun(ctx, "Summarize the incident.", func(ev harness.Event) { ... })
//	err = c.Shutdown(ctx)
//
// # Host services
//
// During a Run the Harness calls the host services registered with it
// (host_service requests). Each registration names a role and a registry
// id and carries agentpm-service's role handlers
// (agentpmservice.ServiceHandlers: Generate, Embed, Retrieve, the Memory
// primitives, the hooks by hook id, RequestApproval), the same functions a
// process provider serves. Each call runs under HandlerTimeout of the
// timeout the Harness applies, so that a slow handler is answered with
// host_service_callback_failed while the Harness still waits; a call for
// a role and registry id not registered is answered
// host_service_not_registered, a malformed one host_service_bad_request.
//
// # Runs
//
// StartRun blocks until the Run ends and passes its events, typed, to a
// callback as they arrive (back-pressure, not buffering: the Harness's
// next frames wait for the callback). When its context ends it sends
// cancel_run and waits a grace period for the Run's end. The client never
// writes an unsolicited frame: it answers the Harness's requests only, and
// a frame of the Harness that fails the protocol's gates (malformed JSON,
// a numeric id, another protocol or version) is never answered: it ends
// the session with a *BadFrameError, as the AgentPM SDKs do.
//
// The Harness's content policy (trace.content, redacted by default)
// replaces content with "[redacted]": Result.Output and Event.Content
// return a value only when the Harness sent one, and say otherwise
// whether it was redacted or left out.
//
// # Errors
//
// Error frames of the Harness match their codes with errors.Is:
// agentpmmachine.ErrSessionBusy, ErrNotInitialized, ErrRunFailed, the
// memory_operation_* codes, ... A Harness that exits is reported with an
// *ExitError carrying the end of its stderr; one that exits before
// writing any frame (a preflight that fails) also matches ErrNoFrame.
// Errors and log lines quote the Harness with secrets masked
// (runtime/redact): the values of the variables passed to it and token
// shapes.
//
// # The process
//
// The Harness gets an allow-listed environment unless Options.Env is set:
// PATH, HOME, the locale and the like, plus the names in Options.PassEnv;
// no API key of this process reaches it by accident. It runs in a process
// group of its own, so a terminal's Ctrl-C reaches only this program,
// which cancels the Run through the protocol (StartRun's context, from
// signal.NotifyContext) and gets its terminal result; stopping it signals
// the whole group, and whatever it started is killed once it has exited.
// On Linux it dies with this process.
package harness
