package envelope

import "github.com/bridgekit/bridgekit/runtime/rpc"

// DecodeFast and DecodeSlow expose Decode's two paths to the tests.
func DecodeFast(c *Codec, line []byte, m *rpc.Message) bool { return c.decodeFast(line, m) }

func DecodeSlow(c *Codec, line []byte, m *rpc.Message) error { return c.decodeSlow(line, m) }
