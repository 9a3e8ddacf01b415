//go:build unix

package boincapi

import (
	"os"
	"path/filepath"
	"testing"
)

// TestShmemTruncatedByApp: the segment file is the app's to write (mode
// 0666). An app that truncates it leaves the client's mapping without
// pages, and every access to it would be a SIGBUS killing the daemon;
// each must be an error instead, and the segment must still close.
func TestShmemTruncatedByApp(t *testing.T) {
	path := filepath.Join(t.TempDir(), MmapFileName)
	s, err := CreateShmem(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.HasMsg(AppStatus); err == nil {
		t.Error("HasMsg on a truncated segment: no error")
	}
	if _, err := s.Send(ProcessControlRequest, "<suspend/>"); err == nil {
		t.Error("Send on a truncated segment: no error")
	}
	if _, _, err := s.Receive(AppStatus); err == nil {
		t.Error("Receive on a truncated segment: no error")
	} else {
		t.Logf("as the daemon sees it: %v", err)
	}
}
