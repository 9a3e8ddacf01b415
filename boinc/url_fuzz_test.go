package boinc

import (
	"path/filepath"
	"strings"
	"testing"
)

// FuzzCanonicalMasterURL: canonicalisation is idempotent (two spellings of
// one project must land on one key), and the escaped directory name of any
// accepted URL is a single safe path component.
func FuzzCanonicalMasterURL(f *testing.F) {
	for _, s := range []string{
		"http://127.0.0.1:18080/", "127.0.0.1:18080", "HTTPS://Example.ORG//a//b", "http://x/?q=1#frag",
		"http://x/%2e%2e/", "http://[::1]:80/p", "http://..", "https://a/../../etc", "ftp://x/", "http://", " http://x ",
		"http://user:pw@host/", "http://h/a b", "http://h/\x00", "http://h%41/",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		c, err := CanonicalMasterURL(raw)
		if err != nil {
			if c != "" {
				t.Fatalf("error %v with result %q", err, c)
			}
			return
		}
		if !strings.HasPrefix(c, "http://") && !strings.HasPrefix(c, "https://") {
			t.Fatalf("canonical %q of %q has another scheme", c, raw)
		}
		c2, err := CanonicalMasterURL(c)
		if err != nil || c2 != c {
			t.Fatalf("not idempotent: %q -> %q -> %q (%v)", raw, c, c2, err)
		}
		checkEscaped(t, c)
	})
}

// FuzzEscapeProjectURL: whatever the URL, the escape is one path component
// that cannot leave the projects directory.
func FuzzEscapeProjectURL(f *testing.F) {
	for _, s := range []string{"http://127.0.0.1:18080/", "..", "http://../", "a/b\\c", "", "_", "http://.", "...."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) { checkEscaped(t, raw) })
}

func checkEscaped(t *testing.T, url string) {
	t.Helper()
	e := EscapeProjectURL(url)
	if e == "" || e == "." || e == ".." || strings.ContainsAny(e, "/\\\x00") {
		t.Fatalf("EscapeProjectURL(%q) = %q", url, e)
	}
	for i := 0; i < len(e); i++ {
		c := e[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			t.Fatalf("EscapeProjectURL(%q) = %q has byte %q", url, e, c)
		}
	}
	base := filepath.FromSlash("/data/projects")
	if j := filepath.Join(base, e); filepath.Dir(j) != base {
		t.Fatalf("EscapeProjectURL(%q) = %q leaves %s", url, e, base)
	}
}

// FuzzValidateFileName: an accepted name, joined to a directory, stays
// strictly inside it, and a physical name (no subdirectory) is one
// component.
func FuzzValidateFileName(f *testing.F) {
	for _, s := range []string{"refapp_1.0_x86_64-pc-linux-gnu", "in", "a/b", "../x", "a/../b", "/etc/passwd", "a//b", "a/./b",
		"x\x00", "C:\\x", "%2e%2e", "a/", "./a", strings.Repeat("a", 256), "\u2024\u2024"} {
		f.Add(s, false)
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, name string, sub bool) {
		if ValidateFileName(name, sub) != nil {
			return
		}
		if !sub && ValidateFileName(name, true) != nil {
			t.Fatalf("%q accepted as physical name but refused as open name", name)
		}
		base := filepath.FromSlash("/data/projects/p")
		j := filepath.Join(base, name)
		rel, err := filepath.Rel(base, j)
		if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, "../") || filepath.IsAbs(rel) {
			t.Fatalf("accepted name %q escapes: %q (rel %q)", name, j, rel)
		}
		if !sub && filepath.Dir(j) != base {
			t.Fatalf("accepted physical name %q is not one component: %q", name, j)
		}
		if strings.ContainsAny(name, "\\%\x00") {
			t.Fatalf("accepted name %q has a forbidden byte", name)
		}
	})
}
