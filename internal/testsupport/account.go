package testsupport

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/boincd/boincd/taskrunner"
)

// Account is a local account a test runs apps as.
type Account struct {
	Name     string
	UID, GID int
}

// LookupAccount returns the existing account name, and skips the test
// when there is none.
func LookupAccount(t testing.TB, name string) Account {
	t.Helper()
	a, err := taskrunner.LookupAccount(name)
	if err != nil {
		t.Skipf("no account %s: %v", name, err)
	}
	return Account{Name: a.Name, UID: int(a.UID), GID: int(a.GID)}
}

// OpenUp makes dir and the directories above it, up to the temporary
// directory, searchable by every account, as a real data directory is
// (t.TempDir creates them 0700).
func OpenUp(t testing.TB, dir string) {
	t.Helper()
	for d := dir; d != "/" && d != os.TempDir(); d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}
