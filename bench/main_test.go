package bench

import (
	"os"
	"testing"
)

// testExe is this test binary, which doubles as the child peer.
var testExe string

func TestMain(m *testing.M) {
	MaybeRunPeer()
	exe, err := os.Executable()
	if err != nil {
		panic(err)
	}
	testExe = exe
	os.Exit(m.Run())
}
