package harn_test

import (
	"testing"

	"go.uber.org/goleak"
)

// The bridge tests start connections; none may leave a goroutine behind.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
