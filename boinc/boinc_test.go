package boinc

import (
	"strings"
	"testing"
	"time"
)

func TestCanonicalMasterURL(t *testing.T) {
	tests := []struct{ in, want string }{
		{"http://Example.ORG/test", "http://example.org/test/"},
		{"https://einsteinathome.org", "https://einsteinathome.org/"},
		{"http://a.org//x//y/", "http://a.org/x/y/"},
		{"  http://127.0.0.1:18080/  ", "http://127.0.0.1:18080/"},
		{"boinc.bakerlab.org/rosetta", "http://boinc.bakerlab.org/rosetta/"},
	}
	for _, tt := range tests {
		got, err := CanonicalMasterURL(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("CanonicalMasterURL(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
	for _, bad := range []string{"", "ftp://a/", "http://", "http://a b/"} {
		if _, err := CanonicalMasterURL(bad); err == nil {
			t.Errorf("CanonicalMasterURL(%q) accepted", bad)
		}
	}
}

func TestEscapeProjectURL(t *testing.T) {
	tests := []struct{ in, want string }{
		{"https://einsteinathome.org/", "einsteinathome.org"},
		{"http://boinc.bakerlab.org/rosetta/", "boinc.bakerlab.org_rosetta"},
		{"http://127.0.0.1:18080/", "127.0.0.1_18080"},
		{"http://../", "___"},
		{"http://a/../../etc/", "a_.._.._etc"},
	}
	for _, tt := range tests {
		got := EscapeProjectURL(tt.in)
		if got != tt.want {
			t.Errorf("EscapeProjectURL(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if strings.ContainsAny(got, "/\\") || got == "." || got == ".." {
			t.Errorf("EscapeProjectURL(%q) = %q is not a safe directory name", tt.in, got)
		}
	}
}

func TestValidateFileName(t *testing.T) {
	tests := []struct {
		name   string
		subdir bool
		ok     bool
	}{
		{"refwu_1_in", false, true},
		{"a/b/c", true, true},
		{"a/b", false, false},
		{"../evil", false, false},
		{"a/../../evil", true, false},
		{"/etc/passwd", true, false},
		{"x\x00y", false, false},
		{"x\ny", false, false},
		{"a\\b", false, false},
		{"50%", false, false},
		{"", false, false},
		{".", false, false},
		{"a//b", true, false},
	}
	for _, tt := range tests {
		err := ValidateFileName(tt.name, tt.subdir)
		if (err == nil) != tt.ok {
			t.Errorf("ValidateFileName(%q, %v) = %v, want ok=%v", tt.name, tt.subdir, err, tt.ok)
		}
	}
}

func TestResultStateMachine(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	happy := []Phase{PhaseDownloading, PhaseDownloaded, PhaseComputing, PhaseUploading, PhaseUploaded, PhaseReported, PhaseAcked}
	r := &Result{Name: "r"}
	for _, p := range happy {
		if err := r.SetPhase(p); err != nil {
			t.Fatalf("happy path: %v", err)
		}
	}
	if r.WireState != 5 {
		t.Fatalf("wire state after upload = %d, want 5", r.WireState)
	}
	illegal := []struct{ from, to Phase }{
		{PhaseAcked, PhaseNew},
		{PhaseAcked, PhaseReported},
		{PhaseReported, PhaseUploaded},
		{PhaseNew, PhaseComputing},
		{PhaseComputing, PhaseUploaded},
		{PhaseUploaded, PhaseAborted},
		{PhaseAborted, PhaseComputing},
	}
	for _, tt := range illegal {
		r := &Result{Name: "r", Phase: tt.from}
		if err := r.SetPhase(tt.to); err == nil {
			t.Errorf("%s → %s accepted", tt.from, tt.to)
		}
	}
	wire := map[Phase]int{PhaseComputeError: 3, PhaseDownloadFailed: 1, PhaseUploadFailed: 7, PhaseAborted: 6}
	from := map[Phase]Phase{PhaseComputeError: PhaseComputing, PhaseDownloadFailed: PhaseDownloading, PhaseUploadFailed: PhaseUploading, PhaseAborted: PhaseNew}
	for p, w := range wire {
		r := &Result{Name: "r", Phase: from[p]}
		if err := r.Fail(p, -1, "x", now); err != nil {
			t.Fatal(err)
		}
		if r.WireState != w || !r.Phase.ReadyToReport() || !r.CompletedTime.Equal(now) {
			t.Errorf("%s: wire %d ready %v completed %v", p, r.WireState, r.Phase.ReadyToReport(), r.CompletedTime)
		}
	}
}

func TestExponentialBackoff(t *testing.T) {
	if got := ExponentialBackoff(0, time.Minute, 4*time.Hour, 0); got != 30*time.Second {
		t.Errorf("n=0,u=0: %v", got)
	}
	if got := ExponentialBackoff(3, time.Minute, 4*time.Hour, 0.999999); got < 7*time.Minute || got > 8*time.Minute {
		t.Errorf("n=3: %v", got)
	}
	if got := ExponentialBackoff(50, time.Minute, 4*time.Hour, 0.999999); got > 4*time.Hour {
		t.Errorf("cap: %v", got)
	}
}

func TestUsableCPUs(t *testing.T) {
	tests := []struct {
		pct  float64
		n    int
		want int
	}{{0, 8, 8}, {100, 8, 8}, {50, 8, 4}, {10, 2, 1}, {75, 2, 1}, {0, 0, 1}}
	for _, tt := range tests {
		if got := (Prefs{MaxNCPUsPct: tt.pct}).UsableCPUs(tt.n); got != tt.want {
			t.Errorf("UsableCPUs(%g%% of %d) = %d, want %d", tt.pct, tt.n, got, tt.want)
		}
	}
}
