package acpunstable

// CurrentProtocolVersion is the wire protocolVersion this package speaks: 1,
// as gen/acp's. ACP's unstable methods and members travel under the same
// protocol version; an agent advertises each through its capabilities
// (sessionCapabilities.fork, agentCapabilities.providers, ...), which a
// client must check before calling it, since an agent of the same version
// may lack it.
const CurrentProtocolVersion ProtocolVersion = 1
