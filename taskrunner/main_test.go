package taskrunner

import (
	"os"
	"testing"

	"github.com/boincd/boincd/internal/demoapp"
)

// TestMain doubles as the demo app: the end-to-end tests install this test
// binary under a name starting with demoapp.BinaryPrefix, exactly as the
// boincd multi-call binary dispatches.
func TestMain(m *testing.M) {
	demoapp.RunIfInvoked()
	os.Exit(m.Run())
}
