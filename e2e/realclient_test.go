//go:build unix

package e2e

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/boincd/boincd/internal/testproject"
	"github.com/boincd/boincd/internal/testsupport"
)

// TestRealClientAgainstTestProject runs the real C++ BOINC client (Debian's
// boinc-client, installed by .ci/run) against the in-repo test project: the
// project server our tests rely on must be one the real client accepts,
// signatures, uploads and reports included. Skipped where the client is
// not installed.
func TestRealClientAgainstTestProject(t *testing.T) {
	t.Parallel()
	bin, err := exec.LookPath("boinc")
	if err != nil {
		t.Skip("the C++ BOINC client (package boinc-client) is not installed")
	}
	srv, err := testproject.New(testproject.Config{
		Name:          "real client interop",
		Apps:          []testproject.App{testproject.DefaultApp()},
		Job:           testproject.JobTemplate{CommandLine: "--seconds 1", InputSize: 1000, ReportImmediately: true, CopyOutput: true},
		TotalJobs:     2,
		MaxJobsPerRPC: 2,
		RequestDelay:  -1,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })

	dir := t.TempDir()
	cc := "<cc_config>\n<log_flags><task>1</task><file_xfer>1</file_xfer><sched_ops>1</sched_ops></log_flags>\n" +
		"<options><no_info_fetch>1</no_info_fetch></options>\n</cc_config>\n"
	if err := os.WriteFile(filepath.Join(dir, "cc_config.xml"), []byte(cc), 0o644); err != nil {
		t.Fatal(err)
	}
	// The C++ client suspends computing while other programs use more
	// than 25 % of the CPUs (suspend_cpu_usage), as the tests running
	// beside this one do; the real-server suite writes the same override.
	prefs := "<global_preferences>\n<suspend_cpu_usage>0</suspend_cpu_usage>\n" +
		"<niu_suspend_cpu_usage>0</niu_suspend_cpu_usage>\n</global_preferences>\n"
	if err := os.WriteFile(filepath.Join(dir, "global_prefs_override.xml"), []byte(prefs), 0o644); err != nil {
		t.Fatal(err)
	}
	// Written by exec's copying goroutine while the test may read it.
	var out testsupport.LogBuffer
	cmd := exec.Command(bin, "--dir", dir, "--no_gpus", "--skip_cpu_benchmarks", "--no_info_fetch",
		"--gui_rpc_port", strconv.Itoa(freePort(t)), "--allow_multiple_clients",
		"--attach_project", srv.URL(), "0123456789abcdef0123456789abcdef")
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
	})

	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		if st := srv.Stats(); len(st.Acked) >= 2 {
			break
		}
		select {
		case <-done:
			t.Fatalf("boinc exited early:\n%s", out.String())
		case <-time.After(500 * time.Millisecond):
		}
	}
	st := srv.Stats()
	if len(st.Acked) < 2 {
		t.Fatalf("real client did not finish 2 tasks in time (acked %v, sent %v); its log:\n%s", st.Acked, st.Sent, out.String())
	}
	if len(st.Errors) > 0 {
		t.Fatalf("the test project saw protocol problems from the real client: %v\nclient log:\n%s", st.Errors, out.String())
	}
	for name, n := range st.Reported {
		if n != 1 {
			t.Errorf("real client reported %s %d times", name, n)
		}
		if r := st.ReportedResults[name]; r.ExitStatus != 0 || r.State != 5 {
			t.Errorf("%s: exit %d state %d\nclient log:\n%s", name, r.ExitStatus, r.State, out.String())
		}
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
