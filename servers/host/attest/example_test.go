package attest_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/bridgekit/bridgekit/servers/host/attest"
	"github.com/go-json-experiment/json/jsontext"
)

// The adapter issues a receipt when its native operation completes; the
// first request naming the receipt binds it, an exact retry gets the same
// success, and a request with other bindings is refused.
func Example() {
	ctx := context.Background()
	a := attest.New(&attest.Options{
		Verify: func(_ context.Context, b attest.Binding) error {
			if b.AuthorityKind != attest.NativeApproval {
				return attest.Errorf(attest.ReasonDenied, "this adapter only attests native approvals")
			}
			return nil
		},
	})
	_ = a.Issue("rcpt-42") // the native approval completed

	args := jsontext.Value(`{"authority_kind":"native_approval",` +
		`"event_fingerprint":"sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",` +
		`"plan_fingerprint":"sha256:fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210",` +
		`"hypothesis_id":"hyp-1","operation_receipt_id":"rcpt-42","run_id":null}`)
	res, err := a.HandleArgs(ctx, args)
	fmt.Println(string(res), err)
	res, err = a.HandleArgs(ctx, args) // an exact retry
	fmt.Println(string(res), err)

	b, _ := attest.ParseArgs(args)
	b.HypothesisID = "hyp-2" // the same receipt for another hypothesis
	_, err = a.Attest(ctx, b)
	fmt.Println(errors.Is(err, attest.ErrReceiptReused))
	fmt.Println(err.(*attest.Error).RPCError())
	// Output:
	// {"_meta":{"harn":{"hostResult":{"schema":"harn.host-result.v1","kind":"hypothesis_native_attestation"}}}} <nil>
	// {"_meta":{"harn":{"hostResult":{"schema":"harn.host-result.v1","kind":"hypothesis_native_attestation"}}}} <nil>
	// true
	// rpc error -32001: hypothesis.attest_event: receipt_reused: the operation receipt is bound to a different request
}
