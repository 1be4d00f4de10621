package realagent

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/bridgekit/bridgekit/internal/proctest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, proctest.IgnoreSpawner()) }
