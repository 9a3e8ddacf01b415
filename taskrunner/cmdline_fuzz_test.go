package taskrunner

import (
	"strings"
	"testing"
	"time"
)

// shellQuote quotes an argument in single quotes, the one POSIX quoting
// without escapes inside.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// FuzzSplitCommandLine: the command line comes from the project's
// scheduler reply. Splitting never panics, and the words it gives, quoted
// back, split to the same words.
func FuzzSplitCommandLine(f *testing.F) {
	for _, s := range []string{
		"--nthreads 2 --device 0", `a "b c" 'd e' f\ g`, `"\"\\\$\` + "`" + `x"`, `'unterminated`, `"unterminated`, `trailing\`,
		"tab\tsep\nnl", `""`, `''`, `a''b""c`, "\x00\xff",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		args, err := splitCommandLine(s)
		if err != nil {
			if args != nil {
				t.Fatal("words and error both returned")
			}
			return
		}
		quoted := make([]string, len(args))
		for i, a := range args {
			quoted[i] = shellQuote(a)
		}
		again, err := splitCommandLine(strings.Join(quoted, " "))
		if err != nil || len(again) != len(args) {
			t.Fatalf("%q: words %q, requoted %q, %v", s, args, again, err)
		}
		for i := range args {
			if again[i] != args[i] {
				t.Fatalf("%q: word %d %q came back as %q", s, i, args[i], again[i])
			}
		}
	})
}

// FuzzParseTemporaryExit: boinc_temporary_exit is written by the app. The
// delay is always within 0–86400 s and the reason one trimmed line.
func FuzzParseTemporaryExit(f *testing.F) {
	for _, s := range []string{"60\nwaiting for GPU\n", "1e300\nx", "-5\n", "nan\n\n", "", "0x10\n  why  \nmore\n", "inf"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, content string) {
		d, reason := parseTemporaryExit(content)
		if d < 0 || d > temporaryExitMax*time.Second {
			t.Fatalf("%q: delay %v", content, d)
		}
		if reason == "" || strings.ContainsAny(reason, "\n") || strings.TrimSpace(reason) != reason {
			t.Fatalf("%q: reason %q", content, reason)
		}
		if m := finishMessage(content); strings.Contains(m, "\n") {
			t.Fatalf("%q: finish message %q", content, m)
		}
	})
}

// FuzzAPIVersionAtLeast: api_version comes from the scheduler reply; the
// comparison never panics and agrees with comparing parsed numbers.
func FuzzAPIVersionAtLeast(f *testing.F) {
	for _, s := range []string{"7.5.0", "7.20", "8", "", "-1.9", " 7 . 5", "99999999999999999999.1", "7.x"} {
		f.Add(s, 7, 5)
	}
	f.Fuzz(func(t *testing.T, v string, major, minor int) {
		at := apiVersionAtLeast(v, major, minor)
		if at && !apiVersionAtLeast(v, major, minor-1) && minor > -1<<62 {
			t.Fatalf("%q >= %d.%d but not >= %d.%d", v, major, minor, major, minor-1)
		}
	})
}
