package hostcond

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

func TestExclusiveRunning(t *testing.T) {
	procs := []Process{
		{Name: "bash", Exe: "/usr/bin/bash"},
		{Name: "fakegame"},
		{Name: "averyveryverylo", Exe: "/opt/x/averyveryverylongname"}, // comm is cut to 15 bytes
		{Name: "Resolve.exe", Exe: `C:\Program Files\Resolve\Resolve.exe`},
		{Name: "kworker/0:1"},
	}
	for _, tc := range []struct {
		names []string
		want  string
	}{
		{nil, ""},
		{[]string{"notrunning"}, ""},
		{[]string{"fakegame"}, "fakegame"},
		{[]string{"FakeGame"}, "FakeGame"},
		{[]string{"nope", "bash"}, "bash"},
		{[]string{"averyveryverylongname"}, "averyveryverylongname"},
		{[]string{"averyveryverylongnameX"}, "averyveryverylongnameX"}, // only the cut form can be compared
		{[]string{"resolve"}, "resolve"},
		{[]string{"resolve.exe"}, "resolve.exe"},
		{[]string{"bas"}, ""},
		{[]string{"  "}, ""},
	} {
		if got := ExclusiveRunning(procs, tc.names); got != tc.want {
			t.Errorf("ExclusiveRunning(%q) = %q, want %q", tc.names, got, tc.want)
		}
	}
}

func TestExclusiveWait(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	var e Exclusive
	steps := []struct {
		at      time.Duration
		running string // "-": no scan at this step
		want    bool
	}{
		{0, "", false},
		{5 * time.Second, "game", true},
		{10 * time.Second, "game", true},
		{15 * time.Second, "", true},                       // seen 5 s ago: still waiting
		{15*time.Second + ExclusiveAppWait - 1, "-", true}, // before the wait ends
		{15*time.Second + ExclusiveAppWait, "-", false},
		{30 * time.Second, "", false},
	}
	for _, s := range steps {
		now := t0.Add(s.at)
		if s.running != "-" {
			e.Observe(now, s.running)
		}
		if got := e.Suspends(now); got != s.want {
			t.Errorf("at %v (scan %q): suspends %v, want %v", s.at, s.running, got, s.want)
		}
	}
	e.Observe(t0, "game")
	e.Reset()
	if e.Suspends(t0) {
		t.Error("suspends after Reset")
	}
}

func TestProcessesInFakeProc(t *testing.T) {
	root := t.TempDir()
	mk := func(pid, comm string) {
		if err := os.MkdirAll(filepath.Join(root, pid), 0o755); err != nil {
			t.Fatal(err)
		}
		if comm != "" {
			if err := os.WriteFile(filepath.Join(root, pid, "comm"), []byte(comm+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	mk("1", "init")
	mk("42", "fakegame")
	mk("43", "") // vanished while listing
	mk("self", "nope")
	if runtime.GOOS != "linux" {
		t.Skip("reads a /proc layout")
	}
	ps, err := processesIn(context.Background(), root)
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 2 || ExclusiveRunning(ps, []string{"fakegame"}) != "fakegame" {
		t.Fatalf("processes %+v", ps)
	}
	if _, err := processesIn(context.Background(), filepath.Join(root, "missing")); err == nil {
		t.Fatal("no error for a missing /proc")
	}
}

// The real list holds the test binary itself.
func TestProcessesFindsSelf(t *testing.T) {
	ps, err := Processes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if ExclusiveRunning(ps, []string{filepath.Base(exe)}) == "" {
		t.Fatalf("%s not among %d processes", filepath.Base(exe), len(ps))
	}
}
