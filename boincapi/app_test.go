package boincapi

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestParseInitDataFixture(t *testing.T) {
	d, err := ReadInitData(filepath.Join("testdata", "init_data.xml"))
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"app_name", d.AppName, "refapp"},
		{"app_version", d.AppVersion, 100},
		{"wu_name", d.WUName, "refwu_1795268541_1"},
		{"result_name", d.ResultName, "refwu_1795268541_1_0"},
		{"project_dir", d.ProjectDir, "/var/lib/boinc-client/projects/127.0.0.1_18080"},
		{"shm_key", d.ShmKey, int64(16818291)},
		{"client_pid", d.ClientPID, 6023},
		{"checkpoint_period", d.CheckpointPeriod, 60.0},
		{"fraction_done_end", d.FractionDoneEnd, 1.0},
		{"gpu_device_num", d.GPUDeviceNum, -1},
		{"rsc_fpops_est", d.RscFpopsEst, 3e10},
		{"computation_deadline", d.ComputationDeadline, 1795864715.0},
		{"host p_ncpus", d.Host.PNCPUs, 2},
		{"host p_fpops", d.Host.PFpops, 1e9},
		{"app files", strings.Join(d.AppFiles, ","), "refapp_1.00_x86_64-pc-linux-gnu.sh"},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if !strings.Contains(d.GlobalPreferences.Inner, "<disk_interval>60.000000</disk_interval>") {
		t.Errorf("global_preferences not kept: %q", d.GlobalPreferences.Inner)
	}
}

func TestParseInitDataErrors(t *testing.T) {
	for _, doc := range []string{"<app_init_data><slot>x</slot></app_init_data>", "<app_init_data>", "not xml"} {
		if _, err := ParseInitData(strings.NewReader(doc)); err == nil {
			t.Errorf("%q parsed", doc)
		}
	}
	big := "<app_init_data><app_name>" + strings.Repeat("a", maxInitDataSize) + "</app_name></app_init_data>"
	if _, err := ParseInitData(strings.NewReader(big)); err == nil {
		t.Error("oversized document parsed")
	}
}

func TestResolveFilename(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("in", "<soft_link>../../projects/127.0.0.1_18080/refwu_in</soft_link>\n")
	write("data", "just data\n")
	write("empty", "")
	write("broken", "<soft_link>../../projects/x")
	write("blank", "<soft_link> </soft_link>\n")
	write("target", "x")
	if err := os.Symlink("target", filepath.Join(dir, "sym")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, want string
		wantErr    bool
	}{
		{"in", "../../projects/127.0.0.1_18080/refwu_in", false},
		{"data", "data", false},
		{"empty", "empty", false},
		{"missing", "missing", false},
		{"sym", "sym", false},
		{"broken", "", true},
		{"blank", "", true},
		{"", "", true},
	}
	for _, tc := range tests {
		got, err := ResolveFilenameIn(dir, tc.name)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("resolve %q = %q, %v; want %q (error %v)", tc.name, got, err, tc.want, tc.wantErr)
		}
	}
}

// exitRecorder replaces os.Exit in tests.
type exitRecorder struct {
	mu    sync.Mutex
	codes []int
	ch    chan int
}

func newExitRecorder() *exitRecorder { return &exitRecorder{ch: make(chan int, 4)} }

func (e *exitRecorder) exit(code int) {
	e.mu.Lock()
	e.codes = append(e.codes, code)
	e.mu.Unlock()
	e.ch <- code
}

func (e *exitRecorder) wait(t *testing.T, d time.Duration) int {
	t.Helper()
	select {
	case c := <-e.ch:
		return c
	case <-time.After(d):
		t.Fatal("no exit")
		return -1
	}
}

// newSlot writes an init_data.xml and creates the mmap file, as the
// client does, and returns the client's handle on the segment.
func newSlot(t *testing.T, clientPID int, period float64) (string, *Shmem) {
	t.Helper()
	dir := t.TempDir()
	doc := fmt.Sprintf("<app_init_data>\n<wu_name>wu</wu_name>\n<result_name>wu_0</result_name>\n"+
		"<shm_key>-1</shm_key>\n<client_pid>%d</client_pid>\n<wu_cpu_time>100.000000</wu_cpu_time>\n"+
		"<checkpoint_period>%f</checkpoint_period>\n<fraction_done_start>0</fraction_done_start>\n"+
		"<fraction_done_end>1</fraction_done_end>\n</app_init_data>\n", clientPID, period)
	if err := os.WriteFile(filepath.Join(dir, InitDataFileName), []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	shm, err := CreateShmem(filepath.Join(dir, MmapFileName))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { shm.Close() })
	return dir, shm
}

func startApp(t *testing.T, dir string) (*App, *exitRecorder) {
	t.Helper()
	rec := newExitRecorder()
	a, err := InitWith(Options{Dir: dir, Exit: rec.exit, Stderr: &strings.Builder{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return a, rec
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestAppStatusAndSuspend(t *testing.T) {
	dir, client := newSlot(t, os.Getpid(), 3600)
	a, _ := startApp(t, dir)
	if a.Standalone() {
		t.Fatal("standalone with init_data.xml present")
	}
	if got := a.InitData().ResultName; got != "wu_0" {
		t.Fatalf("result name %q", got)
	}
	if a.TimeToCheckpoint(context.Background()) {
		t.Fatal("time to checkpoint right after start with a 1 h period")
	}
	a.FractionDone(0.5)
	a.Checkpoint(123)

	var st Status
	eventually(t, "app_status", func() bool {
		msg, ok, err := client.Receive(AppStatus)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			st = ParseAppStatus(msg)
		}
		return ok
	})
	if st.FractionDone != 0.5 || st.CheckpointCPUTime != 123 || st.CurrentCPUTime < 100 {
		t.Fatalf("status %+v", st)
	}

	if _, err := client.Send(ProcessControlRequest, MsgSuspend); err != nil {
		t.Fatal(err)
	}
	eventually(t, "suspend", a.Suspended)
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	err := a.Wait(ctx)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait while suspended = %v", err)
	}
	// No status while suspended.
	client.Receive(AppStatus)
	time.Sleep(1200 * time.Millisecond)
	if full, _ := client.HasMsg(AppStatus); full {
		t.Fatal("app_status sent while suspended")
	}

	waitDone := make(chan error, 1)
	go func() { waitDone <- a.Wait(context.Background()) }()
	if _, err := client.Send(ProcessControlRequest, MsgResume); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-waitDone:
		if err != nil {
			t.Fatalf("Wait after resume = %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Wait did not return after resume")
	}
}

func TestAppControlExits(t *testing.T) {
	tests := []struct {
		name     string
		msg      string
		want     int
		critical bool
	}{
		{"quit", MsgQuit, 0, false},
		{"abort", MsgAbort, 194, false},
		{"quit in critical section", MsgQuit, 0, true},
		{"abort while suspended", MsgAbort, 194, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir, client := newSlot(t, os.Getpid(), 60)
			a, rec := startApp(t, dir)
			if strings.Contains(tc.name, "suspended") {
				client.Send(ProcessControlRequest, MsgSuspend)
				eventually(t, "suspend", a.Suspended)
			}
			if tc.critical {
				a.BeginCriticalSection()
			}
			if _, err := client.Send(ProcessControlRequest, tc.msg); err != nil {
				t.Fatal(err)
			}
			if tc.critical {
				eventually(t, "message read", func() bool { full, _ := client.HasMsg(ProcessControlRequest); return !full })
				select {
				case c := <-rec.ch:
					t.Fatalf("exit(%d) inside a critical section", c)
				case <-time.After(300 * time.Millisecond):
				}
				a.EndCriticalSection()
			}
			if got := rec.wait(t, 5*time.Second); got != tc.want {
				t.Fatalf("exit code %d, want %d", got, tc.want)
			}
			if err := a.Wait(context.Background()); !errors.Is(err, ErrExited) {
				t.Fatalf("Wait after exit = %v", err)
			}
			if _, err := os.Stat(filepath.Join(dir, FinishFileName)); err == nil {
				t.Fatal("finish file written on quit/abort")
			}
		})
	}
}

func TestFinishAndTemporaryExit(t *testing.T) {
	dir, client := newSlot(t, os.Getpid(), 60)
	a, rec := startApp(t, dir)
	a.FractionDone(0.3)
	a.Finish(0, "all good")
	if got := rec.wait(t, time.Second); got != 0 {
		t.Fatalf("exit %d", got)
	}
	b, err := os.ReadFile(filepath.Join(dir, FinishFileName))
	if err != nil || string(b) != "0\nall good\n" {
		t.Fatalf("finish file %q %v", b, err)
	}
	msg, ok, _ := client.Receive(AppStatus)
	if !ok || ParseAppStatus(msg).FractionDone != 1 {
		t.Fatalf("final status %q %v", msg, ok)
	}

	dir2, _ := newSlot(t, os.Getpid(), 60)
	a2, rec2 := startApp(t, dir2)
	a2.TemporaryExit(2*time.Minute, "no GPU")
	if got := rec2.wait(t, time.Second); got != 0 {
		t.Fatalf("exit %d", got)
	}
	b, err = os.ReadFile(filepath.Join(dir2, TemporaryExitFileName))
	if err != nil || string(b) != "120\nno GPU\n" {
		t.Fatalf("temporary exit file %q %v", b, err)
	}
}

func TestStandalone(t *testing.T) {
	dir := t.TempDir()
	rec := newExitRecorder()
	a, err := InitWith(Options{Dir: dir, Exit: rec.exit, MinCheckpointPeriod: 2 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if !a.Standalone() || a.InitData() != nil {
		t.Fatal("not standalone")
	}
	if a.CheckpointPeriod() != 2*time.Minute {
		t.Fatalf("period %v", a.CheckpointPeriod())
	}
	if err := a.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	p, err := a.Resolve("out")
	if err != nil || p != filepath.Join(dir, "out") {
		t.Fatalf("resolve %q %v", p, err)
	}
	a.Finish(3, "bad")
	if got := rec.wait(t, time.Second); got != 3 {
		t.Fatalf("exit %d", got)
	}
	if _, err := os.Stat(filepath.Join(dir, FinishFileName)); err == nil {
		t.Fatal("standalone run wrote a finish file")
	}
}

func TestInitBadFiles(t *testing.T) {
	// Unparseable init_data.xml: standalone, as the C++ API.
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, InitDataFileName), []byte("<app_init_data><slot>x"), 0o644)
	var log strings.Builder
	a, err := InitWith(Options{Dir: dir, Stderr: &log, Exit: func(int) {}})
	if err != nil {
		t.Fatal(err)
	}
	a.Close()
	if !a.Standalone() || !strings.Contains(log.String(), "standalone") {
		t.Fatalf("standalone=%v log=%q", a.Standalone(), log.String())
	}
	// Valid init_data.xml but no mmap file: an error naming the file.
	dir2 := t.TempDir()
	os.WriteFile(filepath.Join(dir2, InitDataFileName), []byte("<app_init_data><shm_key>-1</shm_key></app_init_data>"), 0o644)
	if _, err := InitWith(Options{Dir: dir2, Exit: func(int) {}}); err == nil || !strings.Contains(err.Error(), MmapFileName) {
		t.Fatalf("missing mmap file: %v", err)
	}
}
