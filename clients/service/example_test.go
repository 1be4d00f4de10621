package service_test

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/bridgekit/bridgekit/clients/service"
	"github.com/bridgekit/bridgekit/gen/agentpmservice"
)

// Start an embedding provider, check its handshake, call it. The provider
// here is this test binary in its embedding mode (fake_test.go); a real
// one is any program serving the role, such as examples/providers/embedding.
func Example() {
	exe, _ := os.Executable()
	ctx := context.Background()
	c, err := service.Start(ctx, service.Config{
		Role:       agentpmservice.ServiceRoleEmbedding,
		RegistryID: "hash",
		Command:    []string{exe},
		SetEnv:     []string{"BRIDGEKIT_FAKE_PROVIDER=embedding"},
	})
	if err != nil {
		fmt.Println("unavailable:", err)
		return
	}
	defer c.Close()
	fmt.Println(string(c.Preflight().Readiness))

	payload := &agentpmservice.EmbedPayload{Provider: "p", Model: "m", Dimensions: 1, Normalized: true, Text: "hello"}
	res, err := c.Embed(ctx, payload)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(agentpmservice.CheckEmbedding(payload, res))
	// Output:
	// {"registry_id":"hash","ready":true,"role":"embedding","protocol_version":1,"embedding_spaces":[{"provider":"p","model":"m","dimensions":1,"normalized":false}]}
	// [1] <nil>
}

// A provider that reports another role is unavailable at preflight, with a
// typed reason, rather than failing later.
func ExampleUnavailableError() {
	exe, _ := os.Executable()
	_, err := service.Start(context.Background(), service.Config{
		Role:       agentpmservice.ServiceRoleKnowledge,
		RegistryID: "kb",
		Command:    []string{exe},
		SetEnv:     []string{"BRIDGEKIT_FAKE_PROVIDER=readiness-role"},
	})
	if u, ok := errors.AsType[*service.UnavailableError](err); ok {
		fmt.Println(u.Reason, "-", u.Detail)
	}
	// Output:
	// wrong_role - the provider reports the role "embedding"
}
