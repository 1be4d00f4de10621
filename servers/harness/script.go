package harness

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/bridgekit/bridgekit/gen/agentpmmachine"
	"github.com/bridgekit/bridgekit/gen/agentpmservice"
	"github.com/bridgekit/bridgekit/runtime/rpc"
)

// Script is a scripted Harness, written as JSON: what examples/fakeharness
// reads from --config. Its zero value is a ready Harness that needs a
// model host service and runs the agent loop (AgentLoop) with it.
//
//	{
//	  "required_host_services": [{"role": "model", "registry_id": "default"}],
//	  "content": "full",
//	  "agent": {"knowledge": {"@acme/docs": {"registry_id": "docs"}}},
//	  "runs": [
//	    {"input": "slow", "steps": [{"emit": {"event_type": "phase_started", "payload": {"payload_type": "phase", "phase_id": "main"}}},
//	                                {"wait_cancel": true}]}
//	  ]
//	}
type Script struct {
	// Agents are the agents of the workspace: with more than one, the
	// agent selector must name one (else preflight is selection_required
	// and the Harness exits before its first frame); an unknown selector
	// fails preflight. Empty: any selector is accepted.
	Agents []string `json:"agents,omitempty"`
	// Preflight is the preflight report (default: ready).
	Preflight *agentpmmachine.PreflightReport `json:"preflight,omitempty"`
	// Required are initialize's required_host_services. Absent: model
	// "default"; [] needs none.
	Required []agentpmmachine.HostServiceRegistration `json:"required_host_services,omitempty"`
	// Configured are the type "host" implementations of the configuration.
	// When set, register_host_service follows the Harness's rule
	// (Configured); otherwise every registration is accepted.
	Configured []agentpmmachine.HostServiceRegistration `json:"host_services,omitempty"`
	// Content is the content policy (default redacted).
	Content ContentPolicy `json:"content,omitempty"`
	// HostServiceTimeoutMS is the host-service timeout of registrations
	// that give none (default 120000).
	HostServiceTimeoutMS int64 `json:"host_service_timeout_ms,omitempty"`
	// Agent configures the agent loop of Runs that no entry of Runs
	// matches.
	Agent *Agent `json:"agent,omitempty"`
	// Runs are scripted Runs: the first whose Input matches start_run's
	// input (or that has none) runs.
	Runs []RunScript `json:"runs,omitempty"`
	// MemoryOperations answer memory_operation by "package/operation".
	MemoryOperations map[string]MemoryOperationScript `json:"memory_operations,omitempty"`
}

// RunScript is a scripted Run.
type RunScript struct {
	// Input, if set, is the start_run input this script answers.
	Input *string `json:"input,omitempty"`
	Steps []Step  `json:"steps"`
}

// Step is one step of a scripted Run; exactly one member is set. A Run
// whose steps all pass ends ended, with the output of the last step that
// gave one.
type Step struct {
	// Emit streams a harness_event (Repeat times, default once).
	Emit *EmitStep `json:"emit,omitempty"`
	// HostService calls a host service.
	HostService *HostServiceStep `json:"host_service,omitempty"`
	// Agent runs the agent loop; its outcome ends the Run unless it ended
	// ended.
	Agent *Agent `json:"agent,omitempty"`
	// MCPExportEvent relays an MCP export surface's line.
	MCPExportEvent *agentpmmachine.MCPExportEvent `json:"mcp_export_event,omitempty"`
	// Call sends the client a request of any method.
	Call *CallStep `json:"call,omitempty"`
	// Raw writes a line as it is (a malformed or foreign frame).
	Raw *string `json:"raw,omitempty"`
	// SleepMS waits, ending early if the Run is cancelled.
	SleepMS int64 `json:"sleep_ms,omitempty"`
	// WaitCancel waits until the Run is cancelled.
	WaitCancel bool `json:"wait_cancel,omitempty"`
	// Yield runs a queued memory_operation.
	Yield bool `json:"yield,omitempty"`
	// End ends the Run with this outcome.
	End *Outcome `json:"end,omitempty"`
	// Fail ends the Run with this error (code run_failed when empty).
	Fail *FailStep `json:"fail,omitempty"`
	// Exit makes the Harness exit at once with this status and stderr.
	Exit *ExitStep `json:"exit,omitempty"`
}

// EmitStep is a harness_event to stream.
type EmitStep struct {
	EventType     agentpmmachine.EventType    `json:"event_type"`
	Payload       agentpmmachine.EventPayload `json:"payload"`
	CorrelationID *string                     `json:"correlation_id,omitempty"`
	Repeat        int                         `json:"repeat,omitempty"`
}

// HostServiceStep is a host-service call. Unless ExpectError names the
// code the client must answer with ("*" for any), a failure fails the Run.
type HostServiceStep struct {
	Role        agentpmservice.ServiceRole `json:"role"`
	RegistryID  string                     `json:"registry_id"`
	Method      string                     `json:"method"`
	Payload     jsontext.Value             `json:"payload"`
	ExpectError string                     `json:"expect_error,omitempty"`
	// AsOutput makes the answer the Run's output.
	AsOutput bool `json:"as_output,omitempty"`
}

// CallStep is a request of any method to the client. Unless ExpectError
// names the code the client must answer with ("*" for any), a failure
// fails the Run.
type CallStep struct {
	Method      string         `json:"method"`
	Payload     jsontext.Value `json:"payload,omitempty"`
	ExpectError string         `json:"expect_error,omitempty"`
	AsOutput    bool           `json:"as_output,omitempty"`
}

// FailStep is the error a Run fails with.
type FailStep struct {
	Code    string `json:"code,omitempty"`
	Message string `json:"message"`
}

// ExitStep is the Harness exiting in the middle of a Run.
type ExitStep struct {
	Code   int    `json:"code"`
	Stderr string `json:"stderr,omitempty"`
	// AfterCancel waits for the Run to be cancelled (cancel_run, the end
	// of input), then exits without answering: a Harness that dies while
	// it is being cancelled.
	AfterCancel bool `json:"after_cancel,omitempty"`
}

// MemoryOperationScript answers one memory operation: a result, or an
// error code (and message).
type MemoryOperationScript struct {
	Count   int64  `json:"count,omitempty"`
	Error   string `json:"error,omitempty"`
	Message string `json:"message,omitempty"`
}

// LoadScript reads a Script from a JSON file; unknown members are errors.
func LoadScript(path string) (*Script, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParseScript(data)
}

// ParseScript decodes a Script; unknown members are errors.
func ParseScript(data []byte) (*Script, error) {
	var s Script
	if err := json.Unmarshal(data, &s, json.RejectUnknownMembers(true)); err != nil {
		return nil, fmt.Errorf("harness: script: %w", err)
	}
	if err := s.Content.Check(); err != nil {
		return nil, err
	}
	for i, r := range s.Runs {
		for j, st := range r.Steps {
			if n := st.count(); n != 1 {
				return nil, fmt.Errorf("harness: script: runs[%d].steps[%d] sets %d members, want exactly one", i, j, n)
			}
		}
	}
	return &s, nil
}

func (st *Step) count() int {
	n := 0
	for _, set := range []bool{st.Emit != nil, st.HostService != nil, st.Agent != nil, st.MCPExportEvent != nil, st.Call != nil, st.Raw != nil,
		st.SleepMS != 0, st.WaitCancel, st.Yield, st.End != nil, st.Fail != nil, st.Exit != nil} {
		if set {
			n++
		}
	}
	return n
}

// Options returns the Options that serve the script, starting from base
// (which may be nil) for what the script does not say.
func (s *Script) Options(base *Options) *Options {
	var o Options
	if base != nil {
		o = *base
	}
	if s.Preflight != nil {
		o.Preflight = *s.Preflight
	}
	switch {
	case s.Required != nil:
		o.Required = s.Required
	case o.Required == nil:
		o.Required = []agentpmmachine.HostServiceRegistration{{Role: agentpmservice.ServiceRoleModel, RegistryID: "default"}}
	}
	if s.Configured != nil {
		o.Accept = Configured(s.Configured)
	}
	if s.Content != "" {
		o.Content = s.Content
	}
	if s.HostServiceTimeoutMS > 0 {
		o.HostServiceTimeout = time.Duration(s.HostServiceTimeoutMS) * time.Millisecond
	}
	agent := Agent{}
	if s.Agent != nil {
		agent = *s.Agent
	}
	loop := AgentLoop(agent)
	runs := s.Runs
	o.Run = func(ctx context.Context, r *Run) (*Outcome, error) {
		for _, rs := range runs {
			if rs.Input == nil || *rs.Input == r.Input {
				return runSteps(ctx, r, rs.Steps)
			}
		}
		return loop(ctx, r)
	}
	if s.MemoryOperations != nil {
		ops := s.MemoryOperations
		o.MemoryOperation = func(_ context.Context, _ *Run, p *agentpmmachine.MemoryOperationParams) (*agentpmmachine.MemoryOperationResult, error) {
			op, ok := ops[p.Package+"/"+p.Operation]
			if !ok {
				return nil, &rpc.Error{Name: agentpmmachine.ErrMemoryOperationNotDeclared.Name, Message: fmt.Sprintf("memory package `%s` declares no operation `%s`", p.Package, p.Operation)}
			}
			if op.Error != "" {
				return nil, &rpc.Error{Name: op.Error, Message: op.Message}
			}
			return &agentpmmachine.MemoryOperationResult{Package: p.Package, PackageVersion: "0.0.0", Operation: p.Operation,
				Identity: p.Package + "/operations/" + p.Operation, Count: op.Count}, nil
		}
	}
	return &o
}

// runSteps runs a scripted Run.
func runSteps(ctx context.Context, r *Run, steps []Step) (*Outcome, error) {
	out := &Outcome{Status: agentpmmachine.TerminalStatusEnded}
	for i, st := range steps {
		if st.Exit != nil && st.Exit.AfterCancel {
			<-ctx.Done()
			return nil, &ExitError{Code: st.Exit.Code, Message: st.Exit.Stderr}
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		var err error
		switch {
		case st.Emit != nil:
			for range max(st.Emit.Repeat, 1) {
				ev := &agentpmmachine.HarnessEvent{EventType: st.Emit.EventType, Payload: st.Emit.Payload, CorrelationID: st.Emit.CorrelationID}
				if err = r.EmitEvent(ctx, ev); err != nil {
					break
				}
			}
		case st.HostService != nil:
			h := st.HostService
			var ans jsontext.Value
			payload := h.Payload
			if payload == nil {
				payload = jsontext.Value(`{}`)
			}
			err = expect(r.HostService(ctx, h.Role, h.RegistryID, h.Method, payload, &ans), h.ExpectError, ctx)
			if err == nil && h.AsOutput {
				out.Output = ans
			}
		case st.Agent != nil:
			var o *Outcome
			if o, err = AgentLoop(*st.Agent)(ctx, r); err == nil {
				if o.Status != agentpmmachine.TerminalStatusEnded {
					return o, nil
				}
				out.Output = o.Output
			}
		case st.MCPExportEvent != nil:
			err = r.MCPExportEvent(ctx, st.MCPExportEvent)
		case st.Call != nil:
			var ans jsontext.Value
			err = expect(r.Call(ctx, st.Call.Method, st.Call.Payload, &ans), st.Call.ExpectError, ctx)
			if err == nil && st.Call.AsOutput {
				out.Output = ans
			}
		case st.Raw != nil:
			err = r.WriteLine([]byte(*st.Raw))
		case st.SleepMS > 0:
			t := time.NewTimer(time.Duration(st.SleepMS) * time.Millisecond)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				err = ctx.Err()
			}
		case st.WaitCancel:
			<-ctx.Done()
			err = ctx.Err()
		case st.Yield:
			r.Yield(ctx)
		case st.End != nil:
			return st.End, nil
		case st.Fail != nil:
			code := st.Fail.Code
			if code == "" {
				code = agentpmmachine.ErrRunFailed.Name
			}
			return nil, &rpc.Error{Name: code, Message: st.Fail.Message}
		case st.Exit != nil:
			return nil, &ExitError{Code: st.Exit.Code, Message: st.Exit.Stderr}
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, fmt.Errorf("step %d: %w", i+1, err)
		}
	}
	return out, nil
}

// expect checks a call's error against the code a script expects.
func expect(err error, code string, ctx context.Context) error {
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case code == "":
		return err
	case err == nil:
		return fmt.Errorf("the client answered, where error %s was expected", code)
	case code == "*":
		return nil
	}
	if e, ok := errors.AsType[*rpc.Error](err); ok && e.Name == code {
		return nil
	}
	return fmt.Errorf("want error %s, got %w", code, err)
}
