package statefile

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/boincd/boincd/boinc"
	"github.com/boincd/boincd/platform"
	"go.etcd.io/bbolt"
)

func openT(t testing.TB, path string) *Store {
	t.Helper()
	s, err := Open(path, Options{NoSync: true})
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func loadT(t testing.TB, s *Store) *Snapshot {
	t.Helper()
	snap, err := s.Load()
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return snap
}

func commitT(t testing.TB, s *Store, b *Batch) {
	t.Helper()
	if err := s.Commit(b); err != nil {
		t.Fatalf("Commit: %v", err)
	}
}

var t0 = time.Date(2024, 3, 4, 5, 6, 7, 8000, time.UTC)

// Every field set, so a field the encoding drops shows up in the diff.
func fullProject(url string) *boinc.Project {
	return &boinc.Project{
		MasterURL: url, Authenticator: "auth", ProjectName: "Name", ResourceShare: 150,
		NoNewTasks: true, Suspended: true, DetachPending: true,
		SchedulerURLs: []string{url + "cgi"}, MasterFetchPending: true, MasterFailures: 2,
		HostID: 7, RPCSeqno: 8, CodeSignKey: "key", UserName: "u", TeamName: "t", UserID: 9, TeamID: 10,
		UserTotalCredit: 1.5, UserExpavgCredit: 2.5, HostTotalCredit: 3.5, HostExpavgCredit: 4.5,
		CrossProjectID: "cpid", ProjectPrefs: "<prefs/>", DCF: 1.1, DontUseDCF: true,
		NoRscApps: []string{"NVIDIA"}, Ended: true, SchedRPCPending: boinc.RPCNeedWork,
		LastRPCTime: t0, MinRPCTime: t0.Add(time.Hour), NextRPCTime: t0.Add(2 * time.Hour),
		RPCFailures: 3, TaskFailures: 4, TaskBackoffUntil: t0.Add(3 * time.Hour),
	}
}

func fullApp(url, name string) *boinc.App {
	return &boinc.App{ProjectURL: url, Name: name, UserFriendlyName: "Friendly " + name, NonCPUIntensive: true}
}

func fullAppVersion(url, app string) *boinc.AppVersion {
	return &boinc.AppVersion{
		ProjectURL: url, AppName: app, VersionNum: 712, Platform: platform.LinuxX86_64, PlanClass: "cuda",
		APIVersion: "7.20.0", AvgNCPUs: 0.5, Flops: 1e9, Cmdline: "--gpu", FilePrefix: "pre",
		Coproc:   &boinc.CoprocUsage{Type: "NVIDIA", Count: 1},
		FileRefs: []boinc.FileRef{{FileName: app + "_712", OpenName: "main", MainProgram: true, CopyFile: true, Optional: true}},
	}
}

func fullWorkunit(url, name string) *boinc.Workunit {
	return &boinc.Workunit{
		ProjectURL: url, Name: name, AppName: "app", VersionNum: 712, CommandLine: "-x",
		RscFpopsEst: 1e12, RscFpopsBound: 1e13, RscMemoryBound: 1e8, RscDiskBound: 1e9,
		InputFiles: []boinc.FileRef{{FileName: name + ".in", OpenName: "in"}},
	}
}

func fullResult(url, name string) *boinc.Result {
	return &boinc.Result{
		ProjectURL: url, Name: name, WUName: "wu_" + name, ReportDeadline: t0.Add(48 * time.Hour),
		Platform: platform.LinuxX86_64, VersionNum: 712, PlanClass: "cuda",
		OutputFiles:       []boinc.FileRef{{FileName: name + "_0", OpenName: "out"}},
		ReportImmediately: true, ReceivedTime: t0, Phase: boinc.PhaseUploaded, WireState: 5,
		ExitStatus: -1, FinalCPUTime: 10.5, FinalElapsedTime: 11.5, PeakWorkingSet: 1e6, PeakDiskUsage: 2e6,
		StderrOut: "<stderr_txt>ok</stderr_txt>", ErrorMessage: "none", CompletedTime: t0.Add(time.Hour),
		SuspendedViaGUI: true, Slot: 3, PID: 1234, CheckpointCPUTime: 5, CheckpointElapsedTime: 6,
		CurrentCPUTime: 7, ElapsedTime: 8, FractionDone: 0.75, Restarts: 2, RetryAfter: t0.Add(time.Minute),
	}
}

func fullFile(url, name string) *boinc.FileInfo {
	return &boinc.FileInfo{
		ProjectURL: url, Name: name, DownloadURLs: []string{url + "dl/" + name}, UploadURLs: []string{url + "ul"},
		GzippedURLs: []string{url + "dl/" + name + ".gz"}, GzippedNBytes: 300,
		MD5: "d41d8cd98f00b204e9800998ecf8427e", NBytes: 1024, MaxNBytes: 4096, Executable: true, Sticky: true,
		FileSignature: "sig", XMLSignature: "xsig", SignatureRequired: true, Status: boinc.FilePresent, Uploaded: true,
		Xfer: boinc.FileXfer{NumRetries: 2, FirstRequestTime: t0, NextRequestTime: t0.Add(time.Minute), URLIndex: 1,
			BytesXferred: 512, LastError: "timeout"},
		ErrorMsg: "err",
	}
}

// putProjectTree adds one project with one entity of every kind.
func putProjectTree(b *Batch, url string) {
	b.PutProject(fullProject(url))
	b.PutApp(fullApp(url, "app"))
	b.PutAppVersion(fullAppVersion(url, "app"))
	b.PutWorkunit(fullWorkunit(url, "wu1"))
	b.PutResult(fullResult(url, "r1"))
	b.PutFile(fullFile(url, "f1"))
}

func fileSum(t testing.TB, path string) [32]byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(data)
}

// fillAll sets every field reachable from v to a distinct non-zero value,
// so a field that boinc/ gains later and the encoding drops shows up in the
// round trip.
func fillAll(v reflect.Value, n *int) {
	*n++
	switch v.Kind() {
	case reflect.String:
		v.SetString(fmt.Sprintf("s%d", *n))
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(int64(*n))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(uint64(*n))
	case reflect.Float32, reflect.Float64:
		v.SetFloat(float64(*n) + 0.25)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fillAll(v.Elem(), n)
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 2, 2))
		fillAll(v.Index(0), n)
		fillAll(v.Index(1), n)
	case reflect.Struct:
		if v.Type() == reflect.TypeOf(time.Time{}) {
			v.Set(reflect.ValueOf(t0.Add(time.Duration(*n) * time.Minute)))
			return
		}
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				fillAll(v.Field(i), n)
			}
		}
	default:
		panic(fmt.Sprintf("fillAll: add a case for %s", v.Type()))
	}
}

func filled[T any](n *int, setKey func(*T)) *T {
	v := new(T)
	fillAll(reflect.ValueOf(v).Elem(), n)
	setKey(v)
	return v
}

func TestRoundTripEveryType(t *testing.T) {
	path := filepath.Join(t.TempDir(), "boincd.db")
	s := openT(t, path)
	loadT(t, s)
	const url = "https://einstein.example/"
	var n int
	want := &Snapshot{
		Projects:    []*boinc.Project{filled(&n, func(p *boinc.Project) { p.MasterURL = url })},
		Apps:        []*boinc.App{filled(&n, func(a *boinc.App) { a.ProjectURL = url })},
		AppVersions: []*boinc.AppVersion{filled(&n, func(v *boinc.AppVersion) { v.ProjectURL = url })},
		Workunits:   []*boinc.Workunit{filled(&n, func(w *boinc.Workunit) { w.ProjectURL = url })},
		Results:     []*boinc.Result{filled(&n, func(r *boinc.Result) { r.ProjectURL = url })},
		// AnonymousPlatform files are never stored (TestAnonymousFileNotStored).
		Files: []*boinc.FileInfo{filled(&n, func(f *boinc.FileInfo) { f.ProjectURL, f.AnonymousPlatform = url, false })},
		Meta:  map[string][]byte{"host": []byte(`{"host_cpid":"abc","p_ncpus":8}`), "n": []byte(`42`)},
	}
	var b Batch
	b.PutProject(want.Projects[0])
	b.PutApp(want.Apps[0])
	b.PutAppVersion(want.AppVersions[0])
	b.PutWorkunit(want.Workunits[0])
	b.PutResult(want.Results[0])
	b.PutFile(want.Files[0])
	b.PutMeta("host", map[string]any{"p_ncpus": 8, "host_cpid": "abc"})
	b.PutMeta("n", 42)
	if b.Len() != 8 {
		t.Fatalf("Len = %d, want 8", b.Len())
	}
	commitT(t, s, &b)
	if b.Len() != 0 {
		t.Fatalf("batch not reset after commit: Len = %d", b.Len())
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("state file mode: %v %v, want 0600", fi.Mode(), err)
	}

	s2 := openT(t, path)
	got := loadT(t, s2)
	if !reflect.DeepEqual(got, want) {
		gj, _ := json.MarshalIndent(got, "", " ")
		wj, _ := json.MarshalIndent(want, "", " ")
		t.Fatalf("round trip differs:\ngot  %s\nwant %s", gj, wj)
	}
	if s2.Path() != path {
		t.Fatalf("Path = %q, want %q", s2.Path(), path)
	}
}
func TestLastWriteWinsWithinBatch(t *testing.T) {
	const url = "http://p/"
	tests := []struct {
		name      string
		fill      func(b *Batch)
		wantNames []string // result names present after commit
		wantElaps float64  // ElapsedTime of r1 if present
	}{
		{"put then delete", func(b *Batch) {
			b.PutResult(&boinc.Result{ProjectURL: url, Name: "r1"})
			b.DeleteResult(url + "\x00r1")
		}, nil, 0},
		{"delete then put", func(b *Batch) {
			b.DeleteResult(url + "\x00r1")
			b.PutResult(&boinc.Result{ProjectURL: url, Name: "r1", ElapsedTime: 2})
		}, []string{"r1"}, 2},
		{"same pointer put twice, encoded at commit", func(b *Batch) {
			r := &boinc.Result{ProjectURL: url, Name: "r1", ElapsedTime: 1}
			b.PutResult(r)
			r.ElapsedTime = 5
			b.PutResult(r)
			r.ElapsedTime = 9
		}, []string{"r1"}, 9},
		{"two pointers same key", func(b *Batch) {
			b.PutResult(&boinc.Result{ProjectURL: url, Name: "r1", ElapsedTime: 1})
			b.PutResult(&boinc.Result{ProjectURL: url, Name: "r1", ElapsedTime: 3})
		}, []string{"r1"}, 3},
		{"put before DeleteProjectAll dropped, after kept", func(b *Batch) {
			b.PutResult(&boinc.Result{ProjectURL: url, Name: "r0"})
			b.DeleteProjectAll(url)
			b.PutResult(&boinc.Result{ProjectURL: url, Name: "r1", ElapsedTime: 4})
		}, []string{"r1"}, 4},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := openT(t, filepath.Join(t.TempDir(), "boincd.db"))
			loadT(t, s)
			var b Batch
			tc.fill(&b)
			commitT(t, s, &b)
			snap := loadT(t, s)
			var names []string
			for _, r := range snap.Results {
				names = append(names, r.Name)
				if r.Name == "r1" && r.ElapsedTime != tc.wantElaps {
					t.Errorf("r1.ElapsedTime = %v, want %v", r.ElapsedTime, tc.wantElaps)
				}
			}
			if !reflect.DeepEqual(names, tc.wantNames) {
				t.Errorf("results = %v, want %v", names, tc.wantNames)
			}
		})
	}
}

func TestUnchangedWritesAreSkipped(t *testing.T) {
	path := filepath.Join(t.TempDir(), "boincd.db")
	s := openT(t, path)
	loadT(t, s)
	r := fullResult("http://p/", "r1")
	var b Batch
	b.PutResult(r)
	b.PutMeta("seq", 1)
	commitT(t, s, &b)
	if st := s.Stats(); st.Commits != 1 || st.Puts != 2 || st.SkippedPuts != 0 {
		t.Fatalf("after first commit: %+v", st)
	}

	// Same values again: nothing to write, no transaction.
	b.PutResult(r)
	b.PutMeta("seq", 1)
	b.DeleteResult("http://p/\x00never-stored")
	b.DeleteProjectAll("http://nothing-here/")
	b.DeleteProjectAll("http://nothing-here/")
	commitT(t, s, &b)
	if st := s.Stats(); st.Commits != 1 || st.SkippedPuts != 2 || st.SkippedDeletes != 2 {
		t.Fatalf("after unchanged commit: %+v", st)
	}
	if b.Len() != 0 {
		t.Fatalf("batch not reset after fully skipped commit")
	}

	// A real change is written.
	r.FractionDone = 0.9
	b.PutResult(r)
	commitT(t, s, &b)
	if st := s.Stats(); st.Commits != 2 || st.Puts != 3 {
		t.Fatalf("after changed commit: %+v", st)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	// After a restart, Load primes the hashes from the file.
	s2 := openT(t, path)
	loadT(t, s2)
	b.PutResult(r)
	b.PutMeta("seq", 1)
	commitT(t, s2, &b)
	if st := s2.Stats(); st.Commits != 0 || st.SkippedPuts != 2 {
		t.Fatalf("after reopen: %+v", st)
	}

	// Deleting and re-putting the same value is a change, not a skip.
	b.DeleteResult(r.Key())
	commitT(t, s2, &b)
	b.PutResult(r)
	commitT(t, s2, &b)
	if st := s2.Stats(); st.Commits != 2 {
		t.Fatalf("delete + re-put: %+v", st)
	}
	if got := loadT(t, s2).Results; len(got) != 1 || got[0].FractionDone != 0.9 {
		t.Fatalf("results after re-put: %+v", got)
	}
}

func TestWithoutLoadNothingIsWronglySkipped(t *testing.T) {
	path := filepath.Join(t.TempDir(), "boincd.db")
	s := openT(t, path)
	var b Batch
	putProjectTree(&b, "http://a/")
	commitT(t, s, &b)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// No Load: the store does not know what is stored, so deletes must
	// reach the file.
	s2 := openT(t, path)
	b.DeleteFile("http://a/\x00f1")
	b.DeleteProjectAll("http://a/")
	commitT(t, s2, &b)
	snap := loadT(t, s2)
	if n := len(snap.Projects) + len(snap.Apps) + len(snap.AppVersions) + len(snap.Workunits) + len(snap.Results) + len(snap.Files); n != 0 {
		t.Fatalf("%d entities left after DeleteProjectAll without Load", n)
	}
}

func TestDeleteProjectAll(t *testing.T) {
	const a, ab, other = "http://a/", "http://a/b/", "http://a.example/"
	for _, loaded := range []bool{true, false} {
		t.Run(fmt.Sprintf("loaded=%v", loaded), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "boincd.db")
			s := openT(t, path)
			var b Batch
			putProjectTree(&b, a)
			putProjectTree(&b, ab)
			putProjectTree(&b, other)
			b.PutMeta("keep", true)
			commitT(t, s, &b)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			s = openT(t, path)
			if loaded {
				loadT(t, s)
			}
			b.DeleteProjectAll(a)
			commitT(t, s, &b)

			snap := loadT(t, s)
			var keys []string
			add := func(kind, k string) { keys = append(keys, kind+":"+strings.ReplaceAll(k, "\x00", "|")) }
			for _, p := range snap.Projects {
				add("project", p.MasterURL)
			}
			for _, x := range snap.Apps {
				add("app", x.Key())
			}
			for _, x := range snap.AppVersions {
				add("version", x.Key())
			}
			for _, x := range snap.Workunits {
				add("wu", x.Key())
			}
			for _, x := range snap.Results {
				add("result", x.Key())
			}
			for _, x := range snap.Files {
				add("file", x.Key())
			}
			want := []string{
				"project:" + other, "project:" + ab,
				"app:" + other + "|app", "app:" + ab + "|app",
				"version:" + other + "|app|x86_64-pc-linux-gnu|cuda|712", "version:" + ab + "|app|x86_64-pc-linux-gnu|cuda|712",
				"wu:" + other + "|wu1", "wu:" + ab + "|wu1",
				"result:" + other + "|r1", "result:" + ab + "|r1",
				"file:" + other + "|f1", "file:" + ab + "|f1",
			}
			if !reflect.DeepEqual(keys, want) {
				t.Fatalf("after DeleteProjectAll(%s):\ngot  %q\nwant %q", a, keys, want)
			}
			if string(snap.Meta["keep"]) != "true" {
				t.Fatalf("meta touched: %q", snap.Meta)
			}
			// Once deleted, the hashes forget the keys: putting the same
			// entity again must write it.
			b.PutResult(fullResult(a, "r1"))
			commitT(t, s, &b)
			if got := loadT(t, s).Results; len(got) != 3 {
				t.Fatalf("re-put after DeleteProjectAll: %d results, want 3", len(got))
			}
		})
	}
}

func TestCommitRefusesBadBatches(t *testing.T) {
	tests := []struct {
		name string
		fill func(b *Batch)
		want string
	}{
		{"nil result", func(b *Batch) { b.PutResult(nil) }, "PutResult(nil)"},
		{"nil project", func(b *Batch) { b.PutProject(nil) }, "PutProject(nil)"},
		{"empty project URL", func(b *Batch) { b.PutProject(&boinc.Project{}) }, "empty master URL"},
		{"reserved meta", func(b *Batch) { b.PutMeta("schema_version", 5) }, "reserved"},
		{"empty meta key", func(b *Batch) { b.PutMeta("", 5) }, "empty key"},
		{"NaN", func(b *Batch) {
			b.PutResult(&boinc.Result{ProjectURL: "http://p/", Name: "r", FractionDone: math.NaN()})
		}, "unsupported value"},
		{"unencodable meta", func(b *Batch) { b.PutMeta("ch", make(chan int)) }, "unsupported type"},
		{"key changed after put", func(b *Batch) {
			r := &boinc.Result{ProjectURL: "http://p/", Name: "r"}
			b.PutResult(r)
			r.Name = "renamed"
		}, "key changed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "boincd.db")
			s := openT(t, path)
			loadT(t, s)
			var b Batch
			b.PutMeta("good", 1)
			tc.fill(&b)
			n := b.Len()
			err := s.Commit(&b)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), path) {
				t.Fatalf("Commit error = %v, want one containing %q and the path", err, tc.want)
			}
			if b.Len() != n {
				t.Fatalf("failed commit changed the batch: Len %d → %d", n, b.Len())
			}
			if snap := loadT(t, s); len(snap.Meta) != 0 || len(snap.Results) != 0 || s.Stats().Commits != 0 {
				t.Fatalf("failed commit wrote something: %+v %+v", snap, s.Stats())
			}
			b.Reset()
			if b.Len() != 0 || s.Commit(&b) != nil {
				t.Fatalf("Reset did not clear the batch")
			}
		})
	}
}

func TestClosedStore(t *testing.T) {
	s := openT(t, filepath.Join(t.TempDir(), "boincd.db"))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	var b Batch
	b.PutMeta("x", 1)
	if err := s.Commit(&b); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Fatalf("Commit after Close: %v", err)
	}
	if _, err := s.Load(); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Fatalf("Load after Close: %v", err)
	}
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name string
		path string
		want string
	}{
		{"directory", dir, "is a directory"},
		{"missing parent", filepath.Join(dir, "no", "such", "boincd.db"), "no such file or directory"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Open(tc.path, Options{})
			if err == nil {
				s.Close()
				t.Fatal("Open succeeded")
			}
			if !strings.Contains(err.Error(), tc.want) || errors.Is(err, ErrCorrupt) || errors.Is(err, ErrLocked) {
				t.Fatalf("Open error = %v, want a plain error containing %q", err, tc.want)
			}
		})
	}
}

func TestErrLockedWithinOneProcess(t *testing.T) {
	// bbolt's flock belongs to the open file description, so a second Open
	// in the same process conflicts just like another process would.
	path := filepath.Join(t.TempDir(), "boincd.db")
	first, err := Open(path, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	before := fileSum(t, path)
	second, err := Open(path, Options{LockTimeout: 100 * time.Millisecond})
	if err == nil {
		second.Close()
		t.Fatal("second Open of a locked file succeeded")
	}
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("error %v does not wrap ErrLocked", err)
	}
	want := "another boincd uses this data directory (" + path + " is locked)"
	if err.Error() != want {
		t.Fatalf("error text %q, want %q", err.Error(), want)
	}
	if fileSum(t, path) != before {
		t.Fatal("failed Open modified the file")
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	third, err := Open(path, Options{LockTimeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatalf("Open after the holder closed: %v", err)
	}
	third.Close()
}

func TestMigrationsListIsOrdered(t *testing.T) {
	for i, m := range migrations {
		if m.version != i+1 || m.name == "" || m.apply == nil {
			t.Fatalf("migrations[%d] = {%d %q}: versions must be 1, 2, 3, ... with a name and a func", i, m.version, m.name)
		}
	}
}

// schemaVersionOf reads the version straight from the file.
func schemaVersionOf(t *testing.T, path string) int {
	t.Helper()
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var v int
	if err := db.View(func(tx *bbolt.Tx) error {
		var err error
		v, err = readVersion(tx)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return v
}

// writeRawBolt creates a bbolt file and lets fill shape it, for files this
// package would never write itself.
func writeRawBolt(t *testing.T, path string, fill func(tx *bbolt.Tx) error) {
	t.Helper()
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(fill); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestMigrationFromV0(t *testing.T) {
	tests := []struct {
		name string
		fill func(tx *bbolt.Tx) error
	}{
		{"bare bbolt file", func(*bbolt.Tx) error { return nil }},
		{"foreign bucket kept", func(tx *bbolt.Tx) error {
			b, err := tx.CreateBucket([]byte("legacy"))
			if err != nil {
				return err
			}
			return b.Put([]byte("k"), []byte("v"))
		}},
		{"some buckets already there", func(tx *bbolt.Tx) error {
			_, err := tx.CreateBucket([]byte("results"))
			return err
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "boincd.db")
			writeRawBolt(t, path, tc.fill)
			if v := schemaVersionOf(t, path); v != 0 {
				t.Fatalf("fake v0 file has version %d", v)
			}
			s := openT(t, path)
			snap := loadT(t, s)
			if len(snap.Meta) != 0 || len(snap.Results) != 0 {
				t.Fatalf("migrated file not empty: %+v", snap)
			}
			var b Batch
			putProjectTree(&b, "http://p/")
			commitT(t, s, &b)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if v := schemaVersionOf(t, path); v != latestVersion(migrations) {
				t.Fatalf("version after migration = %d, want %d", v, latestVersion(migrations))
			}
			// Reopening a current file migrates nothing and keeps data.
			s2 := openT(t, path)
			if got := loadT(t, s2); len(got.Results) != 1 {
				t.Fatalf("data lost on reopen: %+v", got)
			}
		})
	}
}

func TestMigrationChainIsAtomic(t *testing.T) {
	path := filepath.Join(t.TempDir(), "boincd.db")
	s := openT(t, path) // now at version 1
	var order []int
	chain := func(failAt int) []migration {
		ms := append([]migration(nil), migrations...)
		for v := 2; v <= 3; v++ {
			ms = append(ms, migration{version: v, name: fmt.Sprintf("step %d", v), apply: func(tx *bbolt.Tx) error {
				order = append(order, v)
				if v == failAt {
					return errors.New("boom")
				}
				_, err := tx.CreateBucket([]byte(fmt.Sprintf("added_v%d", v)))
				return err
			}})
		}
		return ms
	}

	err := s.upgrade(chain(3))
	if err == nil || !strings.Contains(err.Error(), "migration 3 (step 3): boom") || !strings.Contains(err.Error(), "unchanged") {
		t.Fatalf("failing migration: %v", err)
	}
	var v int
	var added bool
	check := func() {
		t.Helper()
		if err := s.db.View(func(tx *bbolt.Tx) error {
			var err error
			v, err = readVersion(tx)
			added = tx.Bucket([]byte("added_v2")) != nil
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	check()
	if v != 1 || added {
		t.Fatalf("failed chain left version %d, bucket from step 2 present=%v", v, added)
	}

	order = nil
	if err := s.upgrade(chain(0)); err != nil {
		t.Fatal(err)
	}
	check()
	if v != 3 || !added || !reflect.DeepEqual(order, []int{2, 3}) {
		t.Fatalf("chain: version %d, added %v, order %v", v, added, order)
	}
}

func TestTooNewSchemaIsRefusedUntouched(t *testing.T) {
	path := filepath.Join(t.TempDir(), "boincd.db")
	s := openT(t, path)
	var b Batch
	putProjectTree(&b, "http://p/")
	commitT(t, s, &b)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	writeRawBolt(t, path, func(tx *bbolt.Tx) error { return writeVersion(tx, 99) })

	before := fileSum(t, path)
	s2, err := Open(path, Options{})
	if err == nil {
		s2.Close()
		t.Fatal("Open of a too-new file succeeded")
	}
	if !errors.Is(err, ErrSchemaTooNew) || errors.Is(err, ErrCorrupt) {
		t.Fatalf("error %v does not wrap ErrSchemaTooNew", err)
	}
	for _, want := range []string{path, "schema version 99", "up to 1", "left as is"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if fileSum(t, path) != before {
		t.Fatal("too-new file was modified")
	}
}

// An app_info.xml file (anonymous platform) is the volunteer's and read
// from app_info.xml at every start: PutFile never writes it, as the C++
// client's write_state_file skips anonymous_platform_file.
func TestAnonymousFileNotStored(t *testing.T) {
	var b Batch
	b.PutFile(&boinc.FileInfo{ProjectURL: "https://p.example/", Name: "my_app", AnonymousPlatform: true})
	if b.Len() != 0 {
		t.Errorf("Len = %d after PutFile of an anonymous platform file, want 0", b.Len())
	}
}
