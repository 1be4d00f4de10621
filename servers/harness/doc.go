// Package harness serves the Harness side of AgentPM's machine protocol
// (`agentpm harness --machine`), for tests and simulators of programs
// that drive a Harness: a Server runs sessions on the generated bindings
// (agentpmmachine.HarnessHandlers) and enforces the session rules the
// Harness enforces:
//
//   - the startup preflight event is the first frame; a preflight that
//     fails ends the process before any frame (Serve returns an
//     *ExitError);
//   - start_run needs initialize first (not_initialized) and every
//     required host service registered (host_service_not_registered);
//   - one Run at a time: start_run during a Run is answered session_busy
//     at once and the active Run goes on untouched; initialize,
//     register_host_service, preflight, shutdown and unknown methods are
//     answered run_active meanwhile;
//   - cancel_run is answered at once, in every state, and ends the Run
//     (its host-service waits fail; it ends cancelled);
//   - memory_operation is queued for the Run's next yield point, one at a
//     time (memory_operation_busy), and fails with
//     memory_operation_no_active_run, _cancelled or _run_ended as the
//     Harness's does;
//   - shutdown is answered, then the session ends;
//   - the content policy (trace.content) applies to every frame but
//     host_service requests, and a late answer to a host-service call
//     is rejected with a protocol_error frame.
//
// What a Run does is a RunFunc: AgentLoop runs the Harness's phase loop
// with the client's host services (model turns, Knowledge and Memory
// actions, hooks, an approval checkpoint), and a Script (JSON) scripts
// sessions step by step for tests. Command runs a Script as `agentpm
// harness ... --machine` would run; examples/fakeharness is that command.
package harness
