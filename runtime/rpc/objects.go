package rpc

import "github.com/bridgekit/bridgekit/runtime/internal/jsonscan"

// OverObjects reports whether f holds more JSON objects and arrays than maxObjects, read as
// Options.MaxObjects is (0: DefaultMaxObjects; negative: no bound). It is the check a Conn makes before
// decoding a frame, for code that reads frames itself before it hands the transport to a Conn (a
// router choosing a protocol version at the handshake).
func OverObjects(f []byte, maxObjects int) bool {
	if maxObjects == 0 {
		maxObjects = DefaultMaxObjects
	}
	return maxObjects > 0 && len(f) > 2*maxObjects && jsonscan.Containers(f, maxObjects)
}
