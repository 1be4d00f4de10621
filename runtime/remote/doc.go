// Package remote carries ACP and Harn sessions across the network, both sides: ACP's Streamable HTTP
// transport and its WebSocket transport, with Harn's WebSocket profile (Bearer or X-API-Key at the
// upgrade, an Origin allow-list, Ping every 30 s with a Pong expected within 10 s, a top-level
// _harn.eventId on every relayed frame, session/list, and session/load with lastAckedEventId), all on the
// engine's seam, runtime/frame.
//
// # Server
//
// A Server is an http.Handler serving one endpoint (conventionally /acp): POST, GET and DELETE are
// Streamable HTTP; a GET with Upgrade: websocket is the WebSocket transport. Each remote connection gets a
// backend, a frame.Transport to the agent (a child process, say), started by the Server's Backend
// function when the client's initialize arrives. A connection's goroutine reads what the backend sends;
// an agent in this process (InProcess) delivers its frames from its own goroutine instead, which spares
// each frame a goroutine's wake-up and each idle connection a goroutine.
//
// Every frame the backend sends to the client gets an event id, one counter per connection, and is kept
// in an eventlog.Log under its session (or the connection's own stream). A WebSocket client that loses its
// socket reconnects within Options.Retention and sends session/load with the last id it acknowledged: the
// Server replays every frame after it, once and in order (agent requests still waiting for an answer
// included, so a running prompt goes on), and attaches the new socket to the same agent. Frames the log
// no longer holds, or an agent that is gone, get the typed answer liveState "expired_replay_only", never
// a silent gap. With a durable log (eventlog/boltlog) the frames survive a restart of the server.
//
// # Client
//
// Dial connects to a URL (ws:// or wss:// for the WebSocket transport, http:// or https:// for
// Streamable HTTP) and returns a frame.Transport for the engine. Over WebSocket it resumes by itself: a
// dropped socket is reconnected and the session reloaded from the last event id, so the engine above sees
// an unbroken stream (frames it sent meanwhile are sent again once the server says it lacks them).
//
// # Security
//
// Authenticate admits a request or refuses it with 401 before anything else (Tokens compares tokens in
// constant time; no token is logged, quoted in an error or forwarded to the agent, which sees only
// frames). A request with an Origin header not in Options.AllowedOrigins gets 403. Connections (in all
// and per principal), sessions per connection, frame size, queued bytes per connection and log bytes per
// session are bounded; a client that reads too slowly is closed with 1008 (WebSocket) or has its stream
// ended, and never holds up the agent or another client.
package remote
