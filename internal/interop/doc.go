// Package interop holds bridgekit's tests against independent peers: ACP
// agents and clients built with the official TypeScript SDK
// (@agentclientprotocol/sdk, in testdata/interop/acp-ts), spawned as child
// processes and driven over real pipes by Go peers built on the generated
// packages. It has no code of its own.
package interop
