package acpv2unstable

// CurrentProtocolVersion is the wire protocolVersion this package speaks: 2,
// as gen/acpv2's. The draft's unstable methods and members travel under the
// same protocol version; an agent advertises each through its capabilities,
// which a client must check before calling it.
const CurrentProtocolVersion ProtocolVersion = 2
