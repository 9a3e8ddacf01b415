//go:build unix

package main

import (
	"context"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// When BOINCD_CMD_CHILD is set, the test binary is boincd itself: the
// process-level tests run the real main with real signals.
func TestMain(m *testing.M) {
	if os.Getenv("BOINCD_CMD_CHILD") != "" {
		os.Exit(run(os.Args, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

type fakeStopper struct {
	mu             sync.Mutex
	reloads, stops int
}

func (f *fakeStopper) Reload()  { f.mu.Lock(); f.reloads++; f.mu.Unlock() }
func (f *fakeStopper) StopNow() { f.mu.Lock(); f.stops++; f.mu.Unlock() }

func TestHandleSignals(t *testing.T) {
	tests := []struct {
		name           string
		sigs           []os.Signal
		cancelled      bool
		reloads, stops int
	}{
		{"hup reloads", []os.Signal{syscall.SIGHUP, syscall.SIGHUP}, false, 2, 0},
		{"term stops gracefully", []os.Signal{syscall.SIGTERM}, true, 0, 0},
		{"second signal stops at once", []os.Signal{syscall.SIGTERM, os.Interrupt}, true, 0, 1},
		{"hup while stopping still reloads", []os.Signal{syscall.SIGINT, syscall.SIGHUP}, true, 1, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			sigs := make(chan os.Signal)
			done := make(chan struct{})
			f := &fakeStopper{}
			exited := make(chan struct{})
			go func() {
				handleSignals(sigs, done, cancel, f, slog.New(slog.NewTextHandler(io.Discard, nil)))
				close(exited)
			}()
			for _, s := range tc.sigs {
				sigs <- s
			}
			close(done)
			<-exited
			if got := ctx.Err() != nil; got != tc.cancelled {
				t.Errorf("cancelled = %v, want %v", got, tc.cancelled)
			}
			if f.reloads != tc.reloads || f.stops != tc.stops {
				t.Errorf("reloads %d stops %d, want %d %d", f.reloads, f.stops, tc.reloads, tc.stops)
			}
		})
	}
}

// The real binary under a fake systemd: READY=1 once started, WATCHDOG=1
// while running, STOPPING=1 on SIGTERM, exit status 0.
func TestSystemdNotify(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "notify.sock")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	msgs := make(chan string, 64)
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				close(msgs)
				return
			}
			msgs <- string(buf[:n])
		}
	}()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	cmd := exec.Command(exe, "--dir", data, "--gui_rpc_port", "0", "--skip_cpu_benchmarks", "--log_format", "json")
	cmd.Env = append(os.Environ(), "BOINCD_CMD_CHILD=1", "NOTIFY_SOCKET="+sock, "WATCHDOG_USEC=2000000",
		"BOINCD_PROJECT_URL=", "BOINCD_ACCOUNT_KEY=")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _, _ = cmd.Process.Wait() })
	want := func(state string, timeout time.Duration) {
		t.Helper()
		deadline := time.After(timeout)
		for {
			select {
			case m := <-msgs:
				if strings.Contains(m, state) {
					return
				}
			case <-deadline:
				t.Fatalf("no %s within %v; log:\n%s", state, timeout, stderr.String())
			}
		}
	}
	want("READY=1", 30*time.Second)
	want("WATCHDOG=1", 10*time.Second)
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	want("STOPPING=1", 10*time.Second)
	errc := make(chan error, 1)
	go func() { errc <- cmd.Wait() }()
	select {
	case err := <-errc:
		if err != nil {
			t.Fatalf("exit: %v; log:\n%s", err, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("still running 30 s after SIGTERM; log:\n%s", stderr.String())
	}
}
