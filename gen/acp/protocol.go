package acp

// CurrentProtocolVersion is the wire protocolVersion of the ACP this package
// speaks: 1, for the current stable schema (spec/schemas/acp/v1, from
// @agentclientprotocol/sdk 2.4.0) and for v0.12.2,
// whose documents decode unchanged. A client sends it in initialize; an
// agent answers with the version it chose, which a client that cannot speak
// it must treat as a failed negotiation.
const CurrentProtocolVersion ProtocolVersion = 1
