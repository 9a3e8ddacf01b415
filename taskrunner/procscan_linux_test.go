package taskrunner

import (
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// procScan reads all of /proc only every fullScanEvery or for a new
// group; in between it reads the members it knows, and drops the ones
// that end.
func TestProcScanKeepsMembersBetweenFullScans(t *testing.T) {
	// A group of three: the shell and two sleeps, their pids printed.
	cmd := exec.Command("sh", "-c", `sleep 60 & a=$!; sleep 60 & b=$!; echo $a $b; wait`)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	buf := make([]byte, 64)
	n, err := stdout.Read(buf)
	if err != nil {
		t.Fatal(err)
	}
	var kids []int
	for _, f := range strings.Fields(string(buf[:n])) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			t.Fatal(err)
		}
		kids = append(kids, pid)
	}
	pg := cmd.Process.Pid
	procs := []procRef{{pid: pg}}
	var ps procScan
	t0 := time.Unix(1_800_000_000, 0)

	u := ps.usages(procs, t0)
	if !u[pg].ok || len(ps.members[pg]) != 3 || !slices.Contains(ps.members[pg], kids[0]) {
		t.Fatalf("full scan: usage %+v, members %v; want the shell and %v", u[pg], ps.members[pg], kids)
	}
	full := ps.full

	// A second later: no full scan, the same three read.
	u = ps.usages(procs, t0.Add(time.Second))
	if !ps.full.Equal(full) || !u[pg].ok || len(ps.members[pg]) != 3 {
		t.Fatalf("member read: full %v, usage %+v, members %v", ps.full, u[pg], ps.members[pg])
	}

	// One sleep ends: it is dropped at the next member read.
	if err := syscall.Kill(kids[0], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		ps.usages(procs, t0.Add(2*time.Second))
		if !slices.Contains(ps.members[pg], kids[0]) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("ended process %d still a member: %v", kids[0], ps.members[pg])
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !ps.full.Equal(full) {
		t.Fatal("a member read turned into a full scan")
	}

	// A new group forces a full scan at once; so does the period.
	other := exec.Command("sleep", "60")
	other.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = other.Process.Kill(); _ = other.Wait() })
	both := append(procs, procRef{pid: other.Process.Pid})
	u = ps.usages(both, t0.Add(3*time.Second))
	if ps.full.Equal(full) || !u[other.Process.Pid].ok {
		t.Fatalf("new group: no full scan (usage %+v)", u[other.Process.Pid])
	}
	full = ps.full
	ps.usages(both, t0.Add(3*time.Second+fullScanEvery))
	if ps.full.Equal(full) {
		t.Fatal("no full scan after fullScanEvery")
	}
	// A clock that went back is not trusted either.
	full = ps.full
	ps.usages(both, t0)
	if ps.full.Equal(full) {
		t.Fatal("no full scan after the clock went back")
	}
}
