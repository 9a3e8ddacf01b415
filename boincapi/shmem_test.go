package boincapi

import (
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func TestShmemChannels(t *testing.T) {
	path := filepath.Join(t.TempDir(), MmapFileName)
	client, err := CreateShmem(path)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Size() != ShmemSize {
		t.Fatalf("size %d, want %d", st.Size(), ShmemSize)
	}
	if runtime.GOOS != "windows" && st.Mode().Perm() != 0o666 {
		t.Fatalf("mode %v, want 0666", st.Mode().Perm())
	}
	// A second, independent mapping stands for the app process.
	app, err := OpenShmem(path)
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()

	tests := []struct {
		name string
		ch   Channel
		msg  string
	}{
		{"short control", ProcessControlRequest, MsgSuspend},
		{"empty", TrickleDown, ""},
		{"three bytes", Heartbeat, "abc"},
		{"status", AppStatus, FormatAppStatus(Status{CurrentCPUTime: 1.5, CheckpointCPUTime: 1, FractionDone: 0.25})},
		{"max length", TrickleUp, strings.Repeat("x", MaxMsgLen)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sent, err := client.Send(tc.ch, tc.msg)
			if err != nil || !sent {
				t.Fatalf("send: %v %v", sent, err)
			}
			if sent, err := client.Send(tc.ch, "second"); err != nil || sent {
				t.Fatalf("send into a full channel: sent=%v err=%v", sent, err)
			}
			full, err := app.HasMsg(tc.ch)
			if err != nil || !full {
				t.Fatalf("app does not see the message: %v %v", full, err)
			}
			got, ok, err := app.Receive(tc.ch)
			if err != nil || !ok || got != tc.msg {
				t.Fatalf("receive = %q %v %v, want %q", got, ok, err, tc.msg)
			}
			if _, ok, _ := client.Receive(tc.ch); ok {
				t.Fatal("channel still full after receive")
			}
		})
	}

	// Overwrite replaces an unread message; a shorter one must not leave
	// a tail of the longer one.
	if err := client.Overwrite(AppStatus, "long message here"); err != nil {
		t.Fatal(err)
	}
	if err := client.Overwrite(AppStatus, "x"); err != nil {
		t.Fatal(err)
	}
	if got, _, _ := app.Receive(AppStatus); got != "x" {
		t.Fatalf("after overwrite got %q", got)
	}

	for _, bad := range []string{strings.Repeat("y", MaxMsgLen+1), "a\x00b"} {
		if err := client.Overwrite(Heartbeat, bad); err == nil {
			t.Fatalf("message %q accepted", bad[:min(10, len(bad))])
		}
	}
	if _, err := client.Send(Channel(8), "x"); err == nil {
		t.Fatal("channel 8 accepted")
	}
	if _, err := client.Send(ProcessControlRequest, MsgQuit); err != nil {
		t.Fatal(err)
	}
	if err := client.Reset(); err != nil {
		t.Fatal(err)
	}
	if full, _ := app.HasMsg(ProcessControlRequest); full {
		t.Fatal("reset left a message")
	}
}

func TestShmemLayoutOffsets(t *testing.T) {
	// The app side of the C++ API reads raw offsets; check ours by bytes.
	path := filepath.Join(t.TempDir(), MmapFileName)
	s, err := CreateShmem(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Send(AppStatus, "<x/>"); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	off := 5 * ChannelSize
	if b[off] != 1 || string(b[off+1:off+5]) != "<x/>" || b[off+5] != 0 {
		t.Fatalf("app_status bytes at %d: %q", off, b[off:off+8])
	}
	if _, err := s.Send(AppStatus, "x"); err == nil {
		t.Fatal("closed segment accepted a send")
	}
}

func TestOpenShmemErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := OpenShmem(filepath.Join(dir, "missing")); err == nil {
		t.Fatal("missing file opened")
	}
	short := filepath.Join(dir, "short")
	if err := os.WriteFile(short, make([]byte, 100), 0o666); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenShmem(short); err == nil || !strings.Contains(err.Error(), "100 bytes") {
		t.Fatalf("short file: %v", err)
	}
}

func TestParseDouble(t *testing.T) {
	tests := []struct {
		msg, tag string
		want     float64
		ok       bool
	}{
		{"<a>1.5</a>", "a", 1.5, true},
		{"<a> 2e3 </a>", "a", 2000, true},
		{"<b>1</b>", "a", 0, false},
		{"<a>1", "a", 0, false},
		{"<a>nan</a>", "a", 0, false},
		{"<a>inf</a>", "a", 0, false},
		{"<a>x</a>", "a", 0, false},
	}
	for _, tc := range tests {
		got, ok := ParseDouble(tc.msg, tc.tag)
		if ok != tc.ok || (ok && math.Abs(got-tc.want) > 1e-9) {
			t.Errorf("ParseDouble(%q, %q) = %v %v, want %v %v", tc.msg, tc.tag, got, ok, tc.want, tc.ok)
		}
	}
}

func TestAppStatusRoundTrip(t *testing.T) {
	in := Status{CurrentCPUTime: 12.25, CheckpointCPUTime: 10.5, FractionDone: 0.375, WantNetwork: true}
	msg := FormatAppStatus(in)
	if !strings.HasPrefix(msg, "<current_cpu_time>1.225000e+01</current_cpu_time>\n<checkpoint_cpu_time>") {
		t.Fatalf("format: %q", msg)
	}
	if got := ParseAppStatus(msg); got != in {
		t.Fatalf("round trip %+v != %+v", got, in)
	}
	if got := ParseAppStatus("<current_cpu_time>3</current_cpu_time>"); got != (Status{CurrentCPUTime: 3}) {
		t.Fatalf("partial: %+v", got)
	}
	if hb := FormatHeartbeat(1e6, 2e9); hb != "<heartbeat/><wss>1.000000e+06</wss><max_wss>2.000000e+09</max_wss>" {
		t.Fatalf("heartbeat %q", hb)
	}
}
