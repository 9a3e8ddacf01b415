//go:build unix

package taskrunner

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/boincd/boincd/boinc"
	"github.com/boincd/boincd/platform"
)

const (
	testURL  = "http://127.0.0.1:18080/"
	testEsc  = "127.0.0.1_18080"
	appFile  = "refapp_1.00_x86_64-pc-linux-gnu.sh"
	inFile   = "refwu_1795268541_1_in"
	outFile  = "refwu_1795268541_1_0_r1_out"
	wuName   = "refwu_1795268541_1"
	resName  = "refwu_1795268541_1_0"
	inputTxt = "input file for the reference app\n"
)

// refApp is the fixture's plain (non-API) app, shortened: it writes "out"
// in the slot without resolving the soft link.
const refApp = `#!/bin/sh
secs=20
[ "$1" = "--seconds" ] && secs="$2"
echo "refapp: start pid=$$ cwd=$(pwd) args=$*" >&2
inpath=$(sed -n 's:.*<soft_link>\(.*\)</soft_link>.*:\1:p' in 2>/dev/null)
[ -n "$inpath" ] || inpath=in
i=0
while [ "$i" -lt "$secs" ]; do
  sleep 1
  i=$((i+1))
done
{
  echo "refapp output"
  echo "input bytes: $(wc -c < "$inpath")"
  echo "slept: $secs"
} > out
echo "refapp: done" >&2
echo 0 > boinc_finish_called
exit 0
`

type testEnv struct {
	dataDir string
	projDir string
	events  chan Event
	runner  *Runner
}

func newTestEnv(t *testing.T, cfg Config) *testEnv {
	t.Helper()
	dataDir := t.TempDir()
	projDir := filepath.Join(dataDir, "projects", testEsc)
	if err := os.MkdirAll(projDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(projDir, inFile), []byte(inputTxt), 0o644); err != nil {
		t.Fatal(err)
	}
	events := make(chan Event, 16)
	cfg.DataDir = dataDir
	cfg.Events = events
	r, err := NewRunner(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		r.StopAll(ctx)
	})
	return &testEnv{dataDir: dataDir, projDir: projDir, events: events, runner: r}
}

func (e *testEnv) writeApp(t *testing.T, name, script string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(e.projDir, name), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
}

// spec is a task like the fixture's: app refapp 1.00, input "in", output
// "out" with a 1 MB limit.
func (e *testEnv) spec(cmdline string) TaskSpec {
	proj := &boinc.Project{MasterURL: testURL, Authenticator: "0123456789abcdef0123456789abcdef", UserName: "refuser", HostID: 1}
	files := map[string]*boinc.FileInfo{
		appFile: {ProjectURL: testURL, Name: appFile, Executable: true, Status: boinc.FilePresent},
		inFile:  {ProjectURL: testURL, Name: inFile, Status: boinc.FilePresent},
		outFile: {ProjectURL: testURL, Name: outFile, MaxNBytes: 1 << 20, UploadURLs: []string{"http://127.0.0.1:18080/upload"}},
	}
	prefs := boinc.DefaultPrefs()
	return TaskSpec{
		Project: proj,
		App:     &boinc.App{ProjectURL: testURL, Name: "refapp"},
		Version: &boinc.AppVersion{ProjectURL: testURL, AppName: "refapp", VersionNum: 100, Platform: platform.LinuxX86_64, AvgNCPUs: 1,
			FileRefs: []boinc.FileRef{{FileName: appFile, MainProgram: true}}},
		WU: &boinc.Workunit{ProjectURL: testURL, Name: wuName, AppName: "refapp", CommandLine: cmdline,
			RscFpopsEst: 3e10, RscFpopsBound: 1e13, RscMemoryBound: 1e8, RscDiskBound: 1e8,
			InputFiles: []boinc.FileRef{{FileName: inFile, OpenName: "in"}}},
		Result: &boinc.Result{ProjectURL: testURL, Name: resName, WUName: wuName, VersionNum: 100, Platform: platform.LinuxX86_64,
			ReportDeadline: time.Unix(1795864715, 0),
			OutputFiles:    []boinc.FileRef{{FileName: outFile, OpenName: "out"}}},
		Files: files,
		Host: boinc.Host{DomainName: "vm", IPAddr: "127.0.0.1", HostCPID: "b7bf3b34162c2edc3003abbdc50384b1", PNCPUs: 2,
			PVendor: "GenuineIntel", PFpops: 1e9, PIops: 1e9, PMembw: 1e9, MNBytes: 25276502016, OSName: "Linux Debian"},
		Prefs: prefs,
		Slot:  -1,
	}
}

func (e *testEnv) slotPath(slot int, name string) string {
	return filepath.Join(e.dataDir, "slots", strconv.Itoa(slot), name)
}

func waitEvent(t *testing.T, ch <-chan Event, d time.Duration) Event {
	t.Helper()
	select {
	case ev := <-ch:
		return ev
	case <-time.After(d):
		t.Fatal("timed out waiting for an exit event")
		return Event{}
	}
}

func waitFor(t *testing.T, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func readPID(t *testing.T, path string) int {
	t.Helper()
	var pid int
	waitFor(t, path, 10*time.Second, func() bool {
		b, err := os.ReadFile(path)
		if err != nil {
			return false
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil && pid > 0
	})
	return pid
}

// procState is the state letter of /proc/PID/stat ("" if gone).
func procState(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 || i+2 >= len(b) {
		return ""
	}
	return string(b[i+2])
}

// gone: no such process, or a zombie nobody reaped yet (in containers
// the reaper of orphans may be lazy).
func gone(pid int) bool {
	if err := unix.Kill(pid, 0); errors.Is(err, unix.ESRCH) {
		return true
	}
	return procState(pid) == "Z"
}

func md5Hex(b []byte) string {
	s := md5.Sum(b)
	return hex.EncodeToString(s[:])
}
