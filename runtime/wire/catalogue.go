package wire

// MethodInfo describes one catalogue method, for introspection and tooling.
type MethodInfo struct {
	Wire, Go, From, To, Kind, Status string
	// Qualifier is the value of the envelope member that identifies the
	// method together with Wire (agentpm-service's service role), or "".
	Qualifier string
	// Operations carried inside the method, if any.
	Operations []OperationInfo
}

// OperationInfo describes one operation carried inside a method.
type OperationInfo struct {
	// Match holds the selector members' values in selector order
	// (host/call: the operation name).
	Match []string
	Go    string
	// Capability and Op say how the operation is advertised (empty when it is not).
	Capability, Op string
	Status         string
}
