package agentpmmachine

// Hand-written beside the generated code: what the Harness derives from
// requests and Run outcomes.

// Registration returns the host service a register_host_service request
// names: its role and its registry id, from registry_id or, when that is
// absent, id. ok is false when it names no registry id.
func (p *RegisterHostServiceParams) Registration() (r HostServiceRegistration, ok bool) {
	r.Role = p.Role
	switch {
	case p.RegistryID != nil:
		r.RegistryID = *p.RegistryID
	case p.ID != nil:
		r.RegistryID = *p.ID
	default:
		return r, false
	}
	return r, true
}

// TerminalEventType returns the event type the Harness reports a Run's end
// with: run_completed for ended and handed_off, run_failed for aborted and
// failed, run_cancelled, run_limit_reached, run_approval_required; "" for a
// status this version does not know.
func TerminalEventType(s TerminalStatus) EventType {
	switch s {
	case TerminalStatusEnded, TerminalStatusHandedOff:
		return EventTypeRunCompleted
	case TerminalStatusAborted, TerminalStatusFailed:
		return EventTypeRunFailed
	case TerminalStatusCancelled:
		return EventTypeRunCancelled
	case TerminalStatusLimitReached:
		return EventTypeRunLimitReached
	case TerminalStatusApprovalRequired:
		return EventTypeRunApprovalRequired
	}
	return ""
}
