package atomicfile

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "a.xml")
	for _, content := range []string{"first\n", "second, longer\n", ""} {
		if err := WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(p)
		if err != nil || string(got) != content {
			t.Fatalf("read %q, %v; want %q", got, err, content)
		}
	}
	if runtime.GOOS != "windows" {
		fi, err := os.Stat(p)
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("mode %v, %v; want 0600", fi.Mode(), err)
		}
	}
	left, _ := os.ReadDir(dir)
	if len(left) != 1 {
		t.Fatalf("directory holds %d entries, want only a.xml: %v", len(left), left)
	}
}

func TestWriteFileFollowsLink(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("symbolic links need privileges on Windows")
	}
	dir := t.TempDir()
	etc := filepath.Join(dir, "etc")
	if err := os.Mkdir(etc, 0o755); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(etc, "gui_rpc_auth.cfg")
	if err := os.WriteFile(target, []byte("old\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "gui_rpc_auth.cfg")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(link, []byte("new\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the link was replaced: %v, %v", fi, err)
	}
	if got, _ := os.ReadFile(target); string(got) != "new\n" {
		t.Fatalf("target holds %q, want new", got)
	}
}

func TestWriteFileFailureLeavesOld(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "sub")
	// A directory where the file should be: the rename fails.
	if err := os.Mkdir(p, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(p, "keep"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := WriteFile(p, []byte("data"), 0o644)
	if err == nil || !strings.Contains(err.Error(), p) {
		t.Fatalf("err %v, want one naming %s", err, p)
	}
	left, _ := os.ReadDir(dir)
	if len(left) != 1 {
		t.Fatalf("a temporary file was left: %v", left)
	}
}
