//go:build unix

package guirpc

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPasswordFileNarrowed: a password file others may read is narrowed
// to 0600 and that is logged once; a private one is left as it is.
func TestPasswordFileNarrowed(t *testing.T) {
	tests := []struct {
		mode, want os.FileMode
		logged     bool
	}{
		{0o644, 0o600, true},
		{0o640, 0o600, true},
		{0o604, 0o600, true},
		{0o666, 0o600, true},
		{0o600, 0o600, false},
		{0o400, 0o400, false},
	}
	for _, tt := range tests {
		t.Run(tt.mode.String(), func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, PasswordFile)
			if err := os.WriteFile(path, []byte("s3cret-pw\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(path, tt.mode); err != nil {
				t.Fatal(err)
			}
			var logs bytes.Buffer
			logger := slog.New(slog.NewJSONHandler(&logs, nil))
			for range 2 {
				pw, err := OpenPassword(dir, logger)
				if err != nil || pw != "s3cret-pw" {
					t.Fatalf("OpenPassword = %q, %v", pw, err)
				}
			}
			st, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if st.Mode().Perm() != tt.want {
				t.Fatalf("mode %04o, want %04o", st.Mode().Perm(), tt.want)
			}
			n := strings.Count(logs.String(), "mode narrowed to 0600")
			if tt.logged && n != 1 || !tt.logged && logs.Len() != 0 {
				t.Fatalf("logs (%d narrowings):\n%s", n, logs.String())
			}
			if strings.Contains(logs.String(), "s3cret-pw") {
				t.Fatalf("the password is in the log:\n%s", logs.String())
			}
		})
	}
}

// TestPasswordFileLinkNarrowed: a password file kept elsewhere and
// linked into the data directory (Debian's boinc-client does this) has
// its target narrowed.
func TestPasswordFileLinkNarrowed(t *testing.T) {
	dir, etc := t.TempDir(), t.TempDir()
	target := filepath.Join(etc, "gui_rpc_auth.cfg")
	if err := os.WriteFile(target, []byte("linked\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(target, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, filepath.Join(dir, PasswordFile)); err != nil {
		t.Fatal(err)
	}
	if pw, err := LoadOrCreatePassword(dir); err != nil || pw != "linked" {
		t.Fatalf("LoadOrCreatePassword = %q, %v", pw, err)
	}
	if st, err := os.Stat(target); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("target mode %v, %v", st.Mode().Perm(), err)
	}
}

// TestEmptyPasswordFileReplaced: an empty gui_rpc_auth.cfg (or one whose
// first line is blank) is replaced by a fresh random password, 0600; the
// log names the file and never holds the password. The C++ client, and
// boincd before issue 14, ran with no password then.
func TestEmptyPasswordFileReplaced(t *testing.T) {
	for _, content := range []string{"", "\n", "  \t\r\n", "\nsecond line\n"} {
		dir := t.TempDir()
		path := filepath.Join(dir, PasswordFile)
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		var logs bytes.Buffer
		pw, err := OpenPassword(dir, slog.New(slog.NewTextHandler(&logs, nil)))
		if err != nil || len(pw) != 32 || strings.Trim(pw, "0123456789abcdef") != "" {
			t.Fatalf("content %q: OpenPassword = %q, %v; want a fresh 32-hex-digit password", content, pw, err)
		}
		data, err := os.ReadFile(path)
		if err != nil || string(data) != pw+"\n" {
			t.Fatalf("content %q: file now holds %q, %v; want the new password", content, data, err)
		}
		if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o600 {
			t.Fatalf("content %q: mode %v, %v; want 0600", content, st.Mode().Perm(), err)
		}
		if !strings.Contains(logs.String(), "was empty") || !strings.Contains(logs.String(), path) || strings.Contains(logs.String(), pw) {
			t.Fatalf("content %q: log should name %s, not the password:\n%s", content, path, logs.String())
		}
		if again, err := OpenPassword(dir, nil); err != nil || again != pw {
			t.Fatalf("content %q: reopened %q, %v; want %q", content, again, err, pw)
		}
		if ents, _ := os.ReadDir(dir); len(ents) != 1 {
			t.Fatalf("content %q: left behind %v", content, ents)
		}
	}
	// Through a link (Debian's layout) the target is replaced, the link kept.
	dir, etc := t.TempDir(), t.TempDir()
	target := filepath.Join(etc, PasswordFile)
	if err := os.WriteFile(target, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, filepath.Join(dir, PasswordFile)); err != nil {
		t.Fatal(err)
	}
	pw, err := OpenPassword(dir, nil)
	if err != nil || pw == "" {
		t.Fatalf("linked empty file: %q, %v", pw, err)
	}
	if fi, err := os.Lstat(filepath.Join(dir, PasswordFile)); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the link was replaced: %v", err)
	}
	if data, _ := os.ReadFile(target); string(data) != pw+"\n" {
		t.Fatalf("target holds %q", data)
	}
}
