package taskrunner

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/boincd/boincd/internal/demoapp"
)

// TestMain doubles as the demo app: the end-to-end tests install this test
// binary under a name starting with demoapp.BinaryPrefix, exactly as the
// boincd multi-call binary dispatches.
func TestMain(m *testing.M) {
	if strings.HasPrefix(filepath.Base(os.Args[0]), demoapp.BinaryPrefix) {
		os.Exit(demoapp.Main(os.Args[1:]))
	}
	os.Exit(m.Run())
}
