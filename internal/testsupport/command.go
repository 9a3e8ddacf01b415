package testsupport

import (
	"bytes"
	"io"
	"strings"
	"testing"
)

// CheckCommand runs a command's run function (its whole main: args
// without the program name, the output streams, the exit status back)
// and fails the test unless the status is code and stdout and stderr
// each contain every one of the wanted strings.
func CheckCommand(t testing.TB, run func(args []string, stdout, stderr io.Writer) int, args []string, code int, wantStdout, wantStderr []string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if got := run(args, &stdout, &stderr); got != code {
		t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", got, code, stdout.String(), stderr.String())
	}
	for _, w := range wantStdout {
		if !strings.Contains(stdout.String(), w) {
			t.Errorf("stdout lacks %q:\n%s", w, stdout.String())
		}
	}
	for _, w := range wantStderr {
		if !strings.Contains(stderr.String(), w) {
			t.Errorf("stderr lacks %q:\n%s", w, stderr.String())
		}
	}
}
