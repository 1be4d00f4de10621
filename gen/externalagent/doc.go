// Package externalagent holds the typed bindings of Harn's external-agent
// delegation (harn.external_agent.v1): the JSON-RPC extension methods
// _harn/externalAgent.plan and _harn/externalAgent.dispatch that a Harn
// runtime sends to an external A2A agent, and the capability, error and
// envelope shapes around them.
//
// They travel on the agent's A2A JSON-RPC endpoint, one request per HTTP
// exchange, so the package has no stream connection: AgentHandlers serves
// any caller of its Handle method (an HTTP handler that has decoded the
// JSON-RPC request), and AgentPeer sends through any rpc.Sender. Harn uses
// string request ids, "<idempotency_key>.plan" and
// "<idempotency_key>.dispatch".
//
// Generated from spec/catalogue/harn-external-agent.json; see
// docs/reference/externalagent.md.
package externalagent
