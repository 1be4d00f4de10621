package acpv2

// CurrentProtocolVersion is the wire protocolVersion of the draft ACP this
// package speaks: 2 (spec/schemas/acp/v2, from @agentclientprotocol/sdk
// 2.4.0). A client sends it in initialize; an agent that answers with
// another version (1: gen/acp) has not agreed to speak v2.
const CurrentProtocolVersion ProtocolVersion = 2
