package taskrunner

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/boincd/boincd/boincapi"
)

func TestParseTrickleUpName(t *testing.T) {
	t.Parallel()
	tests := []struct {
		fname  string
		result string
		at     int64
		ok     bool
	}{
		{"trickle_up_wu_1_0_1700000000.xml", "wu_1_0", 1700000000, true},
		{"trickle_up_wu_1_0_1700000000.xml.sent", "wu_1_0", 1700000000, true},
		{"trickle_up_r_5.2.xml", "r", 5, true}, // a second trickle in the same second
		{"trickle_up_r.xml", "", 0, false},
		{"trickle_up__5.xml", "", 0, false},
		{"trickle_up_r_x.xml", "", 0, false},
		{"trickle_down_5", "", 0, false},
		{"trickle_up_.._5.xml", "", 0, false},
		{`trickle_up_a\b_5.xml`, "", 0, false},
	}
	for _, tc := range tests {
		r, at, ok := ParseTrickleUpName(tc.fname)
		if r != tc.result || at != tc.at || ok != tc.ok {
			t.Errorf("ParseTrickleUpName(%q) = %q, %d, %v; want %q, %d, %v", tc.fname, r, at, ok, tc.result, tc.at, tc.ok)
		}
	}
}

func TestMoveTrickleUp(t *testing.T) {
	t.Parallel()
	now := time.Unix(1700000000, 0)
	setup := func(t *testing.T, body string) (slot, proj string) {
		t.Helper()
		root := t.TempDir()
		slot, proj = filepath.Join(root, "slot"), filepath.Join(root, "proj")
		for _, d := range []string{slot, proj} {
			if err := os.MkdirAll(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if body != "" {
			if err := os.WriteFile(filepath.Join(slot, boincapi.TrickleUpFileName), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return slot, proj
	}
	t.Run("moved, and a second one in the same second kept apart", func(t *testing.T) {
		slot, proj := setup(t, "<variety>v</variety>\none")
		name, err := moveTrickleUp(slot, proj, "wu_1_0", now)
		if err != nil || name != "trickle_up_wu_1_0_1700000000.xml" {
			t.Fatalf("got %q, %v", name, err)
		}
		os.WriteFile(filepath.Join(slot, boincapi.TrickleUpFileName), []byte("two"), 0o644)
		name2, err := moveTrickleUp(slot, proj, "wu_1_0", now)
		if err != nil || name2 != "trickle_up_wu_1_0_1700000000.1.xml" {
			t.Fatalf("second: got %q, %v", name2, err)
		}
		if b, _ := os.ReadFile(filepath.Join(proj, name)); string(b) != "<variety>v</variety>\none" {
			t.Fatalf("first trickle now %q", b)
		}
		if r, at, ok := ParseTrickleUpName(name2); !ok || r != "wu_1_0" || at != now.Unix() {
			t.Fatalf("the second's name does not parse back: %q %d %v", r, at, ok)
		}
	})
	t.Run("hostile result name", func(t *testing.T) {
		for _, bad := range []string{"../../etc/x", `a\b`, "a/b", ""} {
			slot, proj := setup(t, "x")
			if _, err := moveTrickleUp(slot, proj, bad, now); err == nil {
				t.Errorf("result %q: moved", bad)
			}
			if _, err := os.Stat(filepath.Join(slot, boincapi.TrickleUpFileName)); !os.IsNotExist(err) {
				t.Errorf("result %q: slot file left: %v", bad, err)
			}
			if entries, _ := os.ReadDir(proj); len(entries) != 0 {
				t.Errorf("result %q: wrote %v", bad, entries)
			}
		}
	})
	t.Run("oversized", func(t *testing.T) {
		slot, proj := setup(t, strings.Repeat("x", MaxTrickleBytes+1))
		_, err := moveTrickleUp(slot, proj, "r", now)
		if err == nil || !strings.Contains(err.Error(), "more than the 262144") || !strings.Contains(err.Error(), `"r"`) {
			t.Fatalf("err = %v", err)
		}
		if entries, _ := os.ReadDir(proj); len(entries) != 0 {
			t.Errorf("wrote %v", entries)
		}
	})
	t.Run("symlink", func(t *testing.T) {
		if runtime.GOOS == "windows" {
			t.Skip("symlinks")
		}
		slot, proj := setup(t, "")
		secret := filepath.Join(t.TempDir(), "secret")
		os.WriteFile(secret, []byte("secret"), 0o600)
		if err := os.Symlink(secret, filepath.Join(slot, boincapi.TrickleUpFileName)); err != nil {
			t.Fatal(err)
		}
		if _, err := moveTrickleUp(slot, proj, "r", now); err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Fatalf("err = %v", err)
		}
		if entries, _ := os.ReadDir(proj); len(entries) != 0 {
			t.Errorf("wrote %v", entries)
		}
		if b, _ := os.ReadFile(secret); string(b) != "secret" {
			t.Error("the link's target was touched")
		}
	})
}

func TestWriteTrickleDown(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	a, err := WriteTrickleDown(data, 2, 77, []byte("one"))
	if err != nil || a != "trickle_down_77" {
		t.Fatalf("got %q, %v", a, err)
	}
	b, err := WriteTrickleDown(data, 2, 77, []byte("two"))
	if err != nil || b != "trickle_down_77.1" {
		t.Fatalf("second: got %q, %v", b, err)
	}
	for name, want := range map[string]string{a: "one", b: "two"} {
		if got, _ := os.ReadFile(filepath.Join(slotDir(data, 2), name)); string(got) != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
	if _, err := WriteTrickleDown(data, 2, 1, make([]byte, MaxTrickleBytes+1)); err == nil {
		t.Error("oversized body written")
	}
	if _, err := WriteTrickleDown(data, -1, 1, nil); err == nil {
		t.Error("slot -1 written")
	}
}
