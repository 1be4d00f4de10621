// Package jsonrpc is JSON-RPC 2.0 over newline-delimited JSON for bridgekit's connection engine (package
// rpc): a [Codec] and [NewConn], which starts an rpc.Conn speaking it. Harn's stdio bridge and ACP use it.
//
// Inbound lines are checked and split into their members by a one-pass scanner, or by jsontext for the rare
// line it leaves alone. Request ids are echoed byte for byte; outbound ids are integers counting up from 1.
package jsonrpc
