package daemon

import (
	"os"
	"testing"

	"github.com/boincd/boincd/internal/demoapp"
	"github.com/boincd/boincd/internal/testsupport"
)

// TestMain runs more parallel tests than CPUs: the harness's daemons,
// test projects and apps spend their time waiting (testsupport.WaitingParallel).
// The test binary doubles as the demo app (a BOINC API app) when run
// under its name (trickle_test.go).
func TestMain(m *testing.M) {
	demoapp.RunIfInvoked()
	testsupport.RaiseParallel(testsupport.WaitingParallel)
	os.Exit(m.Run())
}
