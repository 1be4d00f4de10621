package main

import (
	"strings"
	"testing"
)

// -gateway and -gateway-header NAME=VAR: the header's value comes from the
// variable, which must be set; a value that cannot be passed on is refused
// without being quoted.
func TestGatewayFlags(t *testing.T) {
	const secret = "gw-flag-secret-9d8c7b"
	lookup := func(name string) (string, bool) {
		switch name {
		case "GW_KEY":
			return secret, true
		case "GW_BAD":
			return secret + "\nx-evil: 1", true
		}
		return "", false
	}
	var h headerFlags
	for _, bad := range []string{"x-api-key", "=GW_KEY", "x-api-key="} {
		if err := h.Set(bad); err == nil {
			t.Errorf("-gateway-header %q accepted", bad)
		}
	}
	if err := h.Set("x-api-key=GW_KEY"); err != nil {
		t.Fatal(err)
	}
	g, err := gatewayOption(options{gateway: "http://127.0.0.1:8080", gatewayHeaders: h}, lookup)
	if err != nil || g == nil || g.BaseURL != "http://127.0.0.1:8080" || len(g.Headers) != 1 || g.Headers["x-api-key"] != secret {
		t.Fatalf("%+v %v", g, err)
	}
	if g, err := gatewayOption(options{gateway: "http://127.0.0.1:8080", gatewayProtocol: "bedrock"}, lookup); err != nil || g.Protocol != "bedrock" {
		t.Errorf("-gateway-protocol: %+v %v", g, err)
	}
	if g, err := gatewayOption(options{}, lookup); g != nil || err != nil {
		t.Errorf("no -gateway: %+v %v", g, err)
	}
	for _, o := range []options{
		{gatewayHeaders: h},            // a header without a gateway
		{gatewayProtocol: "anthropic"}, // a protocol without a gateway
		{gateway: "http://127.0.0.1", gatewayHeaders: headerFlags{"x-api-key=UNSET"}},  // a variable not set
		{gateway: "http://127.0.0.1", gatewayHeaders: headerFlags{"x-api-key=GW_BAD"}}, // a line break in the value
		{gateway: "127.0.0.1:8080"}, // not a URL
	} {
		_, err := gatewayOption(o, lookup)
		if err == nil || strings.Contains(err.Error(), secret) {
			t.Errorf("%+v: %v", o, err)
		}
	}
}
