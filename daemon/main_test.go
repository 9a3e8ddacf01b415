package daemon

import (
	"os"
	"testing"

	"github.com/boincd/boincd/internal/testsupport"
)

// TestMain runs more parallel tests than CPUs: the harness's daemons,
// test projects and apps spend their time waiting (testsupport.WaitingParallel).
func TestMain(m *testing.M) {
	testsupport.RaiseParallel(testsupport.WaitingParallel)
	os.Exit(m.Run())
}
