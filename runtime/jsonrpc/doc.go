// Package jsonrpc is JSON-RPC 2.0 for bridgekit's connection engine (package rpc): a [Codec], [NewConn],
// which starts an rpc.Conn speaking it one message a line (newline-delimited JSON, as on stdio), and
// [NewTransportConn], which starts one over any frame transport (a WebSocket, an HTTP stream). Harn's stdio
// bridge and ACP use it.
//
// Inbound frames are checked and split into their members by a one-pass scanner, or by jsontext for the
// rare frame it leaves alone. Request ids are echoed byte for byte; outbound ids are integers counting up
// from 1.
package jsonrpc
