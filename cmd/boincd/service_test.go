package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/boincd/boincd/config"
	"github.com/boincd/boincd/daemon"
	"github.com/boincd/boincd/winsvc"
)

func windowsEnv(k string) string {
	if k == "ProgramData" {
		return `C:\ProgramData`
	}
	return ""
}

func TestParseServiceInstall(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		want    serviceInstall
		wantErr string
	}{
		{"defaults", nil, serviceInstall{dir: `C:\ProgramData\boincd`,
			account: winsvc.Account{Kind: winsvc.Virtual, StartName: `NT SERVICE\boincd`}}, ""},
		{"user with password", []string{"--user", "alice", "--password", "pw", "--dir", `D:\Volunteer Data`, "--manual"},
			serviceInstall{dir: `D:\Volunteer Data`, password: "pw", passwordGiven: true, manual: true,
				account: winsvc.Account{Kind: winsvc.User, StartName: `.\alice`, NeedsPassword: true}}, ""},
		{"user, password to be asked", []string{"--user", `CORP\bob`}, serviceInstall{dir: `C:\ProgramData\boincd`,
			account: winsvc.Account{Kind: winsvc.User, StartName: `CORP\bob`, NeedsPassword: true}}, ""},
		{"LocalSystem with config", []string{"--user", "LocalSystem", "--config", `C:\etc\b.toml`},
			serviceInstall{dir: `C:\ProgramData\boincd`, configPath: `C:\etc\b.toml`,
				account: winsvc.Account{Kind: winsvc.LocalSystem, StartName: "LocalSystem"}}, ""},
		{"password for a built-in account", []string{"--user", "LocalService", "--password", "x"}, serviceInstall{}, "has no password"},
		{"relative dir", []string{"--dir", `data`}, serviceInstall{}, "not an absolute Windows path"},
		{"relative config", []string{"--config", `b.toml`}, serviceInstall{}, "--config"},
		{"bad user", []string{"--user", `a*b`}, serviceInstall{}, "--user"},
		{"stray argument", []string{"now"}, serviceInstall{}, `unexpected argument "now"`},
		{"unknown flag", []string{"--bogus"}, serviceInstall{}, "flag provided but not defined"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stderr bytes.Buffer
			got, err := parseServiceInstall(tt.args, windowsEnv, &stderr)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("parseServiceInstall = %+v, %v\nwant %+v", got, err, tt.want)
			}
		})
	}
	if _, err := parseServiceInstall([]string{"--help"}, windowsEnv, &bytes.Buffer{}); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("--help: err = %v", err)
	}
}

func TestParseServiceRunRoundTrip(t *testing.T) {
	// What install writes into the service's command line is what run
	// parses back.
	exe := `C:\Program Files\boincd\boincd.exe`
	req := serviceInstall{dir: `D:\My "odd" dir\`, configPath: `C:\cfg dir\b.toml`}
	cmd, err := installedCommandLine(exe, req)
	if err != nil {
		t.Fatal(err)
	}
	argv := winsvc.SplitCommandLine(cmd)
	if len(argv) < 3 || argv[0] != exe || argv[1] != "service" || argv[2] != "run" {
		t.Fatalf("command line %s splits to %q", cmd, argv)
	}
	dir, cfg, err := parseServiceRun(argv[3:], windowsEnv, &bytes.Buffer{})
	if err != nil || dir != req.dir || cfg != req.configPath {
		t.Fatalf("parseServiceRun(%q) = %q, %q, %v", argv[3:], dir, cfg, err)
	}
	dir, cfg, err = parseServiceRun(nil, windowsEnv, &bytes.Buffer{})
	if err != nil || dir != `C:\ProgramData\boincd` || cfg != "" {
		t.Fatalf("defaults: %q, %q, %v", dir, cfg, err)
	}
	if _, _, err := parseServiceRun([]string{"extra"}, windowsEnv, &bytes.Buffer{}); err == nil {
		t.Fatal("stray argument accepted")
	}
}

func TestServiceSubcommand(t *testing.T) {
	tests := []struct {
		args    []string
		sub     string
		restLen int
	}{
		{nil, "", 0},
		{[]string{"install", "--user", "x"}, "install", 2},
		{[]string{"--help"}, "help", 0},
		{[]string{"-h"}, "help", 0},
		{[]string{"stop"}, "stop", 0},
	}
	for _, tt := range tests {
		sub, rest := serviceSubcommand(tt.args)
		if sub != tt.sub || len(rest) != tt.restLen {
			t.Errorf("serviceSubcommand(%q) = %q, %q", tt.args, sub, rest)
		}
	}
}

type memEvents struct {
	mu   sync.Mutex
	msgs []string
}

func (m *memEvents) add(kind, msg string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.msgs = append(m.msgs, kind+": "+msg)
	return nil
}
func (m *memEvents) Info(_ uint32, msg string) error    { return m.add("info", msg) }
func (m *memEvents) Warning(_ uint32, msg string) error { return m.add("warning", msg) }
func (m *memEvents) Error(_ uint32, msg string) error   { return m.add("error", msg) }
func (m *memEvents) all() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return strings.Join(m.msgs, "\n")
}

func TestNewServiceDaemonBadConfig(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, config.FileName), []byte("[log\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var ev memEvents
	handlerFor := func(c config.Log) slog.Handler { return winsvc.NewEventHandler(&ev, logLevel(c)) }
	_, err := newServiceDaemon(dir, "", func(string) string { return "" }, handlerFor)
	if err == nil || !strings.Contains(err.Error(), config.FileName) {
		t.Fatalf("err = %v, want one naming %s", err, config.FileName)
	}
	// An explicit config file that does not exist is an error too.
	if _, err := newServiceDaemon(dir, filepath.Join(dir, "missing.toml"), func(string) string { return "" }, handlerFor); err == nil {
		t.Fatal("missing --config accepted")
	}
}

// TestServiceRunsRealDaemon runs the real daemon in a temporary data
// directory under winsvc.Serve, as the SCM would, stops it, and checks
// the service ends cleanly with its state written and its log in the
// (fake) event log.
func TestServiceRunsRealDaemon(t *testing.T) {
	dir := t.TempDir()
	cfg := "[gui_rpc]\naddress = \"127.0.0.1:0\"\n[log]\nlevel = \"debug\"\n"
	if err := os.WriteFile(filepath.Join(dir, config.FileName), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	var ev memEvents
	handlerFor := func(c config.Log) slog.Handler { return winsvc.NewEventHandler(&ev, logLevel(c)) }
	requests := make(chan winsvc.Cmd)
	statuses := make(chan winsvc.Status)
	final := make(chan winsvc.Status, 1)
	s := &winsvc.Service{
		Logger: slog.New(handlerFor(config.Log{})),
		Start: func() (winsvc.Runner, error) {
			return newServiceDaemon(dir, "", func(string) string { return "" }, handlerFor)
		},
	}
	go func() {
		id := func(x winsvc.Cmd) winsvc.Cmd { return x }
		final <- winsvc.Serve(s, requests, id, statuses, func(st winsvc.Status) winsvc.Status { return st })
	}()
	var states []winsvc.State
	next := func() winsvc.Status {
		select {
		case st := <-statuses:
			states = append(states, st.State)
			return st
		case st := <-final:
			t.Fatalf("service ended early: %+v; events:\n%s", st, ev.all())
		case <-time.After(30 * time.Second):
			t.Fatalf("no status for 30 s; events:\n%s", ev.all())
		}
		return winsvc.Status{}
	}
	next()
	next()
	// Wait until the daemon has opened its state before stopping it.
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(filepath.Join(dir, daemon.StateFileName)); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s after 30 s; events:\n%s", daemon.StateFileName, ev.all())
		}
		time.Sleep(20 * time.Millisecond)
	}
	requests <- winsvc.CmdStop
	next()
	var end winsvc.Status
	for done := false; !done; {
		select {
		case st := <-statuses:
			states = append(states, st.State)
		case end = <-final:
			done = true
		case <-time.After(2 * time.Minute):
			t.Fatalf("not stopped after 2 min; events:\n%s", ev.all())
		}
	}
	if end != (winsvc.Status{State: winsvc.Stopped}) {
		t.Fatalf("final %+v; events:\n%s", end, ev.all())
	}
	if want := []winsvc.State{winsvc.StartPending, winsvc.Running, winsvc.StopPending}; !slices.Equal(slices.Compact(states), want) {
		t.Errorf("states %v, want %v", states, want)
	}
	for _, d := range []string{"projects", "slots"} {
		if fi, err := os.Stat(filepath.Join(dir, d)); err != nil || !fi.IsDir() {
			t.Errorf("data dir lacks %s: %v", d, err)
		}
	}
	if log := ev.all(); !strings.Contains(log, "boincd service running") || !strings.Contains(log, "boincd service stopped") {
		t.Errorf("event log:\n%s", log)
	}
}

func TestDaemonRunnerIdleIsClean(t *testing.T) {
	dir := t.TempDir()
	cfg := "exit_when_idle = true\n[gui_rpc]\naddress = \"127.0.0.1:0\"\n"
	if err := os.WriteFile(filepath.Join(dir, config.FileName), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	var ev memEvents
	r, err := newServiceDaemon(dir, "", func(string) string { return "" },
		func(c config.Log) slog.Handler { return winsvc.NewEventHandler(&ev, logLevel(c)) })
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// With no projects and exit_when_idle the daemon ends by itself with
	// ErrIdle, which the service must treat as a clean stop.
	if err := r.Run(ctx); err != nil {
		t.Fatalf("Run = %v; events:\n%s", err, ev.all())
	}
	if ctx.Err() != nil {
		t.Fatal("Run ended only because the test's deadline passed")
	}
}

// What an install or uninstall left out is said, one line each, after
// the success message (the exit status stays 0).
func TestWriteSkipped(t *testing.T) {
	var b strings.Builder
	writeSkipped(&b, nil)
	if b.Len() != 0 {
		t.Fatalf("nothing skipped wrote %q", b.String())
	}
	writeSkipped(&b, []winsvc.Skipped{
		{What: "restart on failure (recovery actions)", Err: errors.New("Invalid level.")},
		{What: "remove the event log source", Err: winsvc.ErrNotRegistered},
	})
	want := "skipped: restart on failure (recovery actions): Invalid level.\nskipped: remove the event log source: it was not registered\n"
	if b.String() != want {
		t.Errorf("wrote %q, want %q", b.String(), want)
	}
}
