package importer

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/boincd/boincd/boinc"
	"github.com/boincd/boincd/config"
	"github.com/boincd/boincd/daemon"
	"github.com/boincd/boincd/importer/importtest"
	"github.com/boincd/boincd/platform"
	"github.com/boincd/boincd/statefile"
	"github.com/boincd/boincd/workfetch"
)

const (
	fixtureKey = "0123456789abcdef0123456789abcdef"
	fixtureEsc = "127.0.0.1_18080"
)

func runImport(t *testing.T, src, dst string, dry bool) (*Summary, error) {
	t.Helper()
	return Import(context.Background(), Options{BOINCDir: src, DataDir: dst, DryRun: dry, Now: func() time.Time { return time.Unix(1795268600, 0) }})
}

// loadState opens the imported state the way the daemon does.
func loadState(t *testing.T, dir string) *statefile.Snapshot {
	t.Helper()
	st, err := statefile.Open(filepath.Join(dir, daemon.StateFileName), statefile.Options{})
	if err != nil {
		t.Fatalf("open imported state: %v", err)
	}
	defer st.Close()
	snap, err := st.Load()
	if err != nil {
		t.Fatalf("load imported state: %v", err)
	}
	return snap
}

func resultByName(snap *statefile.Snapshot, name string) *boinc.Result {
	for _, r := range snap.Results {
		if r.Name == name {
			return r
		}
	}
	return nil
}

func fileByName(snap *statefile.Snapshot, name string) *boinc.FileInfo {
	for _, f := range snap.Files {
		if f.Name == name {
			return f
		}
	}
	return nil
}

// treeDigest maps every path under root to its mode and content hash, to
// prove the BOINC directory is not touched.
func treeDigest(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		v := info.Mode().String()
		if info.Mode().IsRegular() {
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			s := md5.Sum(b)
			v += " " + hex.EncodeToString(s[:]) + " " + info.ModTime().String()
		}
		out[path] = v
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestImportFixtures(t *testing.T) {
	type wantResult struct {
		phase boinc.Phase
		slot  int
	}
	cases := []struct {
		name        string
		state       string
		missing     []string
		corrupt     []string
		results     map[string]wantResult
		resumed     int
		restarted   int
		toDownload  []string
		rpcSeqno    int64
		filesCopied int
	}{
		{
			name:  "one task running",
			state: "client_state_task_running.xml",
			results: map[string]wantResult{
				"refwu_1795268541_1_0": {boinc.PhaseComputing, 0},
			},
			resumed:     1,
			filesCopied: 2,
		},
		{
			name:    "two executing one downloading, an input missing",
			state:   "client_state_2executing_1downloading.xml",
			missing: []string{"refwu_1795268042_2_in"},
			results: map[string]wantResult{
				"refwu_1795268042_1_0": {boinc.PhaseComputing, 0},
				"refwu_1795268042_2_0": {boinc.PhaseDownloading, -1},
				"refwu_1795268042_3_0": {boinc.PhaseDownloading, -1},
			},
			resumed:     1,
			restarted:   1,
			toDownload:  []string{"refwu_1795268042_2_in"},
			filesCopied: 2,
		},
		{
			name:        "after report, app corrupt",
			state:       "client_state_after_report.xml",
			corrupt:     []string{importtest.AppFile},
			results:     map[string]wantResult{},
			toDownload:  []string{importtest.AppFile},
			rpcSeqno:    3,
			filesCopied: 0,
		},
		{
			name:        "after report",
			state:       "client_state_after_report.xml",
			results:     map[string]wantResult{},
			rpcSeqno:    3,
			filesCopied: 1,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			src := importtest.Build(t, importtest.Options{StateFile: tc.state, Missing: tc.missing, Corrupt: tc.corrupt})
			before := treeDigest(t, src.Path)
			dst := filepath.Join(t.TempDir(), "boincd")
			sum, err := runImport(t, src.Path, dst, false)
			if err != nil {
				t.Fatalf("Import: %v", err)
			}
			if after := treeDigest(t, src.Path); len(after) != len(before) {
				t.Errorf("the BOINC directory changed: %d entries before, %d after", len(before), len(after))
			} else {
				for k, v := range before {
					if after[k] != v {
						t.Errorf("the BOINC directory changed at %s", k)
					}
				}
			}
			if len(sum.Projects) != 1 {
				t.Fatalf("summary has %d projects, want 1", len(sum.Projects))
			}
			ps := sum.Projects[0]
			if len(ps.Resumed) != tc.resumed || len(ps.Restarted) != tc.restarted {
				t.Errorf("resumed %v restarted %v, want %d and %d", ps.Resumed, ps.Restarted, tc.resumed, tc.restarted)
			}
			var dl []string
			for _, f := range ps.ToDownload {
				dl = append(dl, f.Name)
			}
			if strings.Join(dl, ",") != strings.Join(tc.toDownload, ",") {
				t.Errorf("to download %v, want %v", ps.ToDownload, tc.toDownload)
			}
			if ps.FilesCopied != tc.filesCopied {
				t.Errorf("files copied %d, want %d", ps.FilesCopied, tc.filesCopied)
			}

			snap := loadState(t, dst)
			if len(snap.Projects) != 1 {
				t.Fatalf("state has %d projects, want 1", len(snap.Projects))
			}
			p := snap.Projects[0]
			if p.MasterURL != importtest.FixtureURL || p.Authenticator != fixtureKey || p.HostID != 1 || p.RPCSeqno != tc.rpcSeqno {
				t.Errorf("project %s key %q hostid %d seqno %d", p.MasterURL, p.Authenticator, p.HostID, p.RPCSeqno)
			}
			if p.ProjectName != "BOINC Reference Fake Project" || p.UserName != "refuser" || p.CrossProjectID != "11111111111111111111111111111111" {
				t.Errorf("project identity not imported: %+v", p)
			}
			if len(p.SchedulerURLs) != 1 || p.SchedulerURLs[0] != "http://127.0.0.1:18080/cgi" || p.MasterFetchPending {
				t.Errorf("scheduler URLs %v, master fetch pending %v", p.SchedulerURLs, p.MasterFetchPending)
			}
			if !strings.HasPrefix(p.CodeSignKey, "1024\n") || !strings.HasSuffix(p.CodeSignKey, "\n.") {
				t.Errorf("code sign key not imported: %q", p.CodeSignKey)
			}
			if p.Origin != "gui_rpc" || p.ResourceShare != 100 || p.DetachPending {
				t.Errorf("origin %q share %g detach %v", p.Origin, p.ResourceShare, p.DetachPending)
			}
			if !strings.Contains(p.ProjectPrefs, "<resource_share>100</resource_share>") {
				t.Errorf("project prefs %q", p.ProjectPrefs)
			}
			if len(snap.Apps) != 1 || snap.Apps[0].Name != "refapp" || len(snap.AppVersions) != 1 {
				t.Errorf("apps %d versions %d", len(snap.Apps), len(snap.AppVersions))
			}
			if v := snap.AppVersions[0]; v.VersionNum != 100 || v.Platform != platform.This() || len(v.FileRefs) != 1 || !v.FileRefs[0].MainProgram {
				t.Errorf("app version %+v", v)
			}
			if len(snap.Results) != len(tc.results) {
				t.Errorf("%d results, want %d", len(snap.Results), len(tc.results))
			}
			for name, w := range tc.results {
				r := resultByName(snap, name)
				if r == nil {
					t.Errorf("result %s missing", name)
					continue
				}
				if r.Phase != w.phase || r.Slot != w.slot {
					t.Errorf("result %s: phase %s slot %d, want %s %d", name, r.Phase, r.Slot, w.phase, w.slot)
				}
				if r.ReportDeadline.IsZero() || r.ReceivedTime.IsZero() || len(r.OutputFiles) != 1 || !r.OutputFiles[0].CopyFile {
					t.Errorf("result %s fields: %+v", name, r)
				}
				if r.Phase == boinc.PhaseComputing {
					b, err := os.ReadFile(filepath.Join(dst, "slots", "0", importtest.CheckpointFile))
					if err != nil || !strings.Contains(string(b), name) {
						t.Errorf("slot checkpoint of %s: %q, %v", name, b, err)
					}
					if b, err := os.ReadFile(filepath.Join(dst, "slots", "0", "sub", "state")); err != nil || !strings.Contains(string(b), name) {
						t.Errorf("nested slot file of %s: %q, %v", name, b, err)
					}
					for _, gone := range []string{"init_data.xml", "boinc_finish_called", "escape"} {
						if _, err := os.Lstat(filepath.Join(dst, "slots", "0", gone)); !errors.Is(err, fs.ErrNotExist) {
							t.Errorf("slot file %s was copied (%v)", gone, err)
						}
					}
				}
			}
			// Every workunit kept belongs to a result; files are verified.
			for _, w := range snap.Workunits {
				if w.ProjectURL != importtest.FixtureURL || w.CommandLine != "--seconds 90" && w.CommandLine != "--seconds 30" {
					t.Errorf("workunit %+v", w)
				}
			}
			for _, f := range snap.Files {
				path := filepath.Join(dst, "projects", fixtureEsc, f.Name)
				b, err := os.ReadFile(path)
				switch f.Status {
				case boinc.FilePresent:
					s := md5.Sum(b)
					if err != nil || hex.EncodeToString(s[:]) != f.MD5 {
						t.Errorf("present file %s: md5 mismatch or unreadable (%v)", f.Name, err)
					}
				case boinc.FileNotPresent:
					if err == nil && !f.IsUpload() {
						t.Errorf("file %s is not present in state but was copied", f.Name)
					}
				default:
					t.Errorf("file %s status %d", f.Name, f.Status)
				}
				if f.Name == importtest.AppFile {
					if !f.SignatureRequired || f.FileSignature == "" || !f.Executable {
						t.Errorf("app file %+v", f)
					}
					if f.Status == boinc.FilePresent {
						if fi, err := os.Stat(path); err != nil || fi.Mode().Perm()&0o111 == 0 {
							t.Errorf("app file not executable: %v", err)
						}
					}
				}
			}
			var host boinc.Host
			if err := json.Unmarshal(snap.Meta["host"], &host); err != nil || host.HostCPID == "" || host.PNCPUs != 2 {
				t.Errorf("host meta %s: %v", snap.Meta["host"], err)
			}
			var sched workfetch.ProjectState
			if err := json.Unmarshal(snap.Meta["sched:"+importtest.FixtureURL], &sched); err != nil || sched.DCF <= 0 {
				t.Errorf("sched meta %s: %v", snap.Meta["sched:"+importtest.FixtureURL], err)
			}
			cfg, err := config.Load(filepath.Join(dst, config.FileName), false, nil)
			if err != nil {
				t.Fatalf("config written by the import: %v", err)
			}
			if len(cfg.Projects) != 1 || cfg.Projects[0].URL != importtest.FixtureURL || cfg.Projects[0].Authenticator != fixtureKey {
				t.Errorf("config projects %+v", cfg.Projects)
			}
			if fi, err := os.Stat(filepath.Join(dst, config.FileName)); err != nil || fi.Mode().Perm() != 0o600 {
				t.Errorf("config holds an account key; mode %v (%v)", fi.Mode(), err)
			}
			if _, err := os.Stat(filepath.Join(dst, "projects", fixtureEsc+"~import")); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("staging directory left behind: %v", err)
			}
			var text strings.Builder
			if err := sum.WriteText(&text); err != nil || !strings.Contains(text.String(), "host id 1") {
				t.Errorf("summary text %q (%v)", text.String(), err)
			}
		})
	}
}

// Finished tasks: uploaded ones are reported (they carry credit), ones
// with outputs still to upload go to upload, acknowledged ones are
// dropped, and an output that is gone makes an upload failure.
func TestImportFinishedResults(t *testing.T) {
	const (
		r1, r2, r3 = "refwu_1795268042_1_0", "refwu_1795268042_2_0", "refwu_1795268042_3_0"
		o1, o2, o3 = "refwu_1795268042_1_0_r7919_0", "refwu_1795268042_2_0_r15838_0", "refwu_1795268042_3_0_r23757_0"
	)
	finish := func(t *testing.T, s, res, state string) string {
		s = importtest.SetResultField(t, s, res, "state", state)
		s = importtest.SetResultField(t, s, res, "final_cpu_time", "29.5")
		s = importtest.SetResultField(t, s, res, "final_elapsed_time", "30.25")
		s = importtest.SetResultField(t, s, res, "completed_time", "1795268100.5")
		return importtest.SetResultField(t, s, res, "stderr_out", "<![CDATA[refapp: done\n]]>")
	}
	for _, lose := range []bool{false, true} {
		name := "outputs present"
		var missing []string
		if lose {
			name, missing = "upload output lost", []string{o2}
		}
		t.Run(name, func(t *testing.T) {
			src := importtest.Build(t, importtest.Options{
				StateFile: "client_state_2executing_1downloading.xml",
				Missing:   missing,
				Edit: func(s string) string {
					s = finish(t, s, r1, "5")
					s = importtest.SetResultField(t, s, r1, "ready_to_report", "1")
					s = importtest.SetFileField(t, s, o1, "status", "1")
					s = importtest.SetFileField(t, s, o1, "nbytes", "64")
					s = importtest.AddFileFlag(t, s, o1, "uploaded")
					s = finish(t, s, r2, "4")
					s = importtest.SetFileField(t, s, o2, "status", "1")
					s = importtest.SetFileField(t, s, o2, "nbytes", "80")
					s = finish(t, s, r3, "5")
					s = importtest.SetResultField(t, s, r3, "ready_to_report", "1")
					s = importtest.SetResultField(t, s, r3, "got_server_ack", "1")
					return s
				},
			})
			dst := filepath.Join(t.TempDir(), "boincd")
			sum, err := runImport(t, src.Path, dst, false)
			if err != nil {
				t.Fatalf("Import: %v", err)
			}
			ps := sum.Projects[0]
			if ps.Dropped != 1 || len(ps.PendingReport) != 1 || ps.PendingReport[0] != r1 || len(ps.Resumed) != 0 {
				t.Errorf("summary: dropped %d pending %v resumed %v", ps.Dropped, ps.PendingReport, ps.Resumed)
			}
			snap := loadState(t, dst)
			if resultByName(snap, r3) != nil || fileByName(snap, o3) != nil {
				t.Errorf("acknowledged result %s or its output was imported", r3)
			}
			if p := snap.Projects[0]; p.SchedRPCPending != boinc.RPCResultsDue {
				t.Errorf("sched_rpc_pending %v, want results due", p.SchedRPCPending)
			}
			up := resultByName(snap, r1)
			if up == nil || up.Phase != boinc.PhaseUploaded || up.WireState != 5 || !up.Phase.ReadyToReport() ||
				up.FinalCPUTime != 29.5 || up.FinalElapsedTime != 30.25 || up.StderrOut != "refapp: done\n" || up.CompletedTime.IsZero() || up.Slot != -1 {
				t.Errorf("uploaded result %+v", up)
			}
			if f := fileByName(snap, o1); f == nil || !f.Uploaded || f.Status != boinc.FilePresent || f.XMLSignature == "" {
				t.Errorf("uploaded output %+v", f)
			}
			if _, err := os.Stat(filepath.Join(dst, "projects", fixtureEsc, o1)); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("an output the server has was copied (%v)", err)
			}
			ul := resultByName(snap, r2)
			if ul == nil || ul.Phase != boinc.PhaseUploading || ul.WireState != 0 {
				t.Fatalf("uploading result %+v", ul)
			}
			f := fileByName(snap, o2)
			if lose {
				if f.Status != boinc.ErrFileMissing || !strings.Contains(f.ErrorMsg, "missing") || len(ps.OutputsLost) != 1 || len(ps.ToUpload) != 0 {
					t.Errorf("lost output: status %d msg %q summary %+v", f.Status, f.ErrorMsg, ps)
				}
				return
			}
			if f.Status != boinc.FilePresent || f.Uploaded || len(ps.ToUpload) != 1 {
				t.Errorf("output to upload: %+v, summary %+v", f, ps.ToUpload)
			}
			b, err := os.ReadFile(filepath.Join(dst, "projects", fixtureEsc, o2))
			if err != nil || string(b) != string(src.Contents[o2]) {
				t.Errorf("output to upload not copied: %v", err)
			}
		})
	}
}

// A file whose code signature does not verify with the project's key is
// never marked present: boincd would run it.
func TestImportBadSignature(t *testing.T) {
	src := importtest.Build(t, importtest.Options{
		StateFile: "client_state_task_running.xml",
		Edit: func(s string) string {
			return importtest.SetFileField(t, s, importtest.AppFile, "file_signature", "\n"+strings.Repeat("ab", 64)+"\n.\n")
		},
	})
	dst := filepath.Join(t.TempDir(), "boincd")
	sum, err := runImport(t, src.Path, dst, false)
	if err != nil {
		t.Fatalf("Import: %v", err)
	}
	ps := sum.Projects[0]
	if len(ps.ToDownload) != 1 || !strings.Contains(ps.ToDownload[0].Reason, "signature") {
		t.Fatalf("to download %+v", ps.ToDownload)
	}
	if len(ps.Restarted) != 1 || ps.Results[boinc.PhaseDownloading] != 1 {
		t.Errorf("task should start over after the download: %+v", ps)
	}
	snap := loadState(t, dst)
	if f := fileByName(snap, importtest.AppFile); f.Status != boinc.FileNotPresent {
		t.Errorf("app file status %d", f.Status)
	}
	if _, err := os.Stat(filepath.Join(dst, "projects", fixtureEsc, importtest.AppFile)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a file failing its signature was left in the project directory (%v)", err)
	}
}

// A link in the project directory is never followed.
func TestImportSymlinkNotFollowed(t *testing.T) {
	src := importtest.Build(t, importtest.Options{StateFile: "client_state_after_report.xml", Missing: []string{importtest.AppFile}})
	if err := os.Symlink(filepath.Join(importtest.FixtureDir(t), "signing", importtest.AppFile), filepath.Join(src.ProjectDir, importtest.AppFile)); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), "boincd")
	sum, err := runImport(t, src.Path, dst, false)
	if err != nil {
		t.Fatalf("Import: %v", err)
	}
	if dl := sum.Projects[0].ToDownload; len(dl) != 1 || dl[0].Reason != "not a regular file" {
		t.Errorf("to download %+v", dl)
	}
}

func TestImportHostileInput(t *testing.T) {
	const state = "client_state_2executing_1downloading.xml"
	cases := []struct {
		name    string
		edit    func(string) string
		account func(string) string
		want    []string // substrings of the error
	}{
		{
			name: "file name with traversal",
			edit: func(s string) string {
				return strings.Replace(s, "<name>refwu_1795268042_3_in</name>", "<name>../../../etc/passwd</name>", 1)
			},
			want: []string{"client_state.xml:", "<file> ../../../etc/passwd", "<name>", "path separator"},
		},
		{
			name: "file_ref file name absolute",
			edit: func(s string) string {
				return strings.Replace(s, "<file_name>refwu_1795268042_2_in</file_name>", "<file_name>/etc/shadow</file_name>", 1)
			},
			want: []string{"<workunit> refwu_1795268042_2 <file_ref> <file_name>", "absolute path"},
		},
		{
			name: "open name escaping the slot",
			edit: func(s string) string {
				return strings.Replace(s, "<open_name>in</open_name>", "<open_name>../../in</open_name>", 1)
			},
			want: []string{"<open_name>", "'..'"},
		},
		{
			name: "result name with a slash",
			edit: func(s string) string {
				return strings.Replace(s, "<name>refwu_1795268042_3_0</name>", "<name>a/b</name>", 1)
			},
			want: []string{"<result> a/b <name>", "path separator"},
		},
		{
			name: "malformed XML",
			edit: func(s string) string { return strings.Replace(s, "</workunit>", "</workunitx>", 1) },
			want: []string{"client_state.xml:", "malformed XML"},
		},
		{
			name: "truncated file",
			edit: func(s string) string { return s[:len(s)/2] },
			want: []string{"client_state.xml:", "malformed XML"},
		},
		{
			name: "unknown result state",
			edit: func(s string) string { return strings.Replace(s, "<state>0</state>", "<state>42</state>", 1) },
			want: []string{"<result> refwu_1795268042_3_0 <state>", "unknown result state 42"},
		},
		{
			name: "bad number",
			edit: func(s string) string { return strings.Replace(s, "<hostid>1</hostid>", "<hostid>one</hostid>", 1) },
			want: []string{"<project> http://127.0.0.1:18080/ <hostid>", `invalid integer "one"`},
		},
		{
			name: "slot out of range",
			edit: func(s string) string { return strings.Replace(s, "<slot>1</slot>", "<slot>-3</slot>", 1) },
			want: []string{"<active_task> refwu_1795268042_2_0 <slot>", "out of range"},
		},
		{
			name: "not a state file",
			edit: func(string) string { return "<account>\n</account>\n" },
			want: []string{"document element must be <client_state>"},
		},
		{
			name: "master URL not http",
			edit: func(s string) string {
				return strings.Replace(s, "<master_url>http://127.0.0.1:18080/</master_url>", "<master_url>file:///etc/</master_url>", 1)
			},
			want: []string{"<project> file:///etc/ <master_url>", "scheme"},
		},
		{
			name:    "account key with markup",
			account: func(s string) string { return strings.Replace(s, fixtureKey, `x" evil = "1`, 1) },
			want:    []string{"account_127.0.0.1_18080.xml:", "<account> <authenticator>", "whitespace or markup"},
		},
		{
			name: "deep nesting",
			edit: func(s string) string {
				return strings.Replace(s, "<net_stats>", strings.Repeat("<x>", 100)+strings.Repeat("</x>", 100)+"<net_stats>", 1)
			},
			want: []string{"nested deeper than"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			src := importtest.Build(t, importtest.Options{StateFile: state})
			if tc.edit != nil {
				path := filepath.Join(src.Path, "client_state.xml")
				if err := os.WriteFile(path, []byte(tc.edit(src.State)), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if tc.account != nil {
				path := filepath.Join(src.Path, "account_"+fixtureEsc+".xml")
				b, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(tc.account(string(b))), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			dst := filepath.Join(t.TempDir(), "boincd")
			_, err := runImport(t, src.Path, dst, false)
			if err == nil {
				t.Fatal("Import accepted hostile input")
			}
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Errorf("error is not a ParseError: %v", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
			if _, err := os.Stat(dst); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("the boincd directory was created for a refused import (%v)", err)
			}
		})
	}
}

func TestImportTwiceRefused(t *testing.T) {
	src := importtest.Build(t, importtest.Options{StateFile: "client_state_task_running.xml"})
	dst := filepath.Join(t.TempDir(), "boincd")
	if _, err := runImport(t, src.Path, dst, false); err != nil {
		t.Fatalf("first import: %v", err)
	}
	before := treeDigest(t, dst)
	for _, dry := range []bool{true, false} {
		_, err := runImport(t, src.Path, dst, dry)
		if !errors.Is(err, ErrAlreadyImported) || !strings.Contains(err.Error(), importtest.FixtureURL) {
			t.Errorf("second import (dry run %v): %v, want ErrAlreadyImported naming the project", dry, err)
		}
	}
	after := treeDigest(t, dst)
	for k, v := range before {
		if strings.HasSuffix(k, daemon.StateFileName) {
			continue // bbolt may rewrite its meta page on open
		}
		if after[k] != v {
			t.Errorf("refused import changed %s", k)
		}
	}
	if len(after) != len(before) {
		t.Errorf("refused import added or removed files: %d → %d", len(before), len(after))
	}
}

func TestImportDryRun(t *testing.T) {
	src := importtest.Build(t, importtest.Options{StateFile: "client_state_2executing_1downloading.xml", Corrupt: []string{"refwu_1795268042_1_in"}})
	dst := filepath.Join(t.TempDir(), "boincd")
	sum, err := runImport(t, src.Path, dst, true)
	if err != nil {
		t.Fatalf("dry run: %v", err)
	}
	if _, err := os.Stat(dst); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("dry run created the boincd directory (%v)", err)
	}
	ps := sum.Projects[0]
	if !sum.DryRun || ps.Results[boinc.PhaseComputing] != 1 || ps.Results[boinc.PhaseDownloading] != 2 || len(ps.ToDownload) != 1 {
		t.Errorf("dry run summary %+v", ps)
	}
	var text strings.Builder
	if err := sum.WriteText(&text); err != nil || !strings.Contains(text.String(), "Nothing was written") {
		t.Errorf("dry run text %q", text.String())
	}
}

// An account file without state is attached fresh; a state project
// without an account file is skipped, as the C++ client does.
func TestImportAccountsOnly(t *testing.T) {
	src := importtest.Build(t, importtest.Options{StateFile: "client_state_after_report.xml", NoAccount: true})
	dst := filepath.Join(t.TempDir(), "boincd")
	if _, err := runImport(t, src.Path, dst, false); err == nil || !strings.Contains(err.Error(), "no attached project") {
		t.Fatalf("import without accounts: %v", err)
	}
	acct := "<account>\n<master_url>https://Other.Example/proj</master_url>\n<authenticator>k1</authenticator>\n</account>\n"
	if err := os.WriteFile(filepath.Join(src.Path, "account_other.example_proj.xml"), []byte(acct), 0o644); err != nil {
		t.Fatal(err)
	}
	sum, err := runImport(t, src.Path, dst, false)
	if err != nil {
		t.Fatalf("Import: %v", err)
	}
	if len(sum.Skipped) != 1 || sum.Skipped[0] != importtest.FixtureURL || len(sum.Projects) != 1 || !sum.Projects[0].AttachOnly {
		t.Errorf("summary %+v", sum)
	}
	snap := loadState(t, dst)
	p := snap.Projects[0]
	if p.MasterURL != "https://other.example/proj/" || p.Authenticator != "k1" || !p.MasterFetchPending || p.SchedRPCPending != boinc.RPCInit || p.ResourceShare != 100 {
		t.Errorf("attach-only project %+v", p)
	}
}

func TestImportConfigMerge(t *testing.T) {
	existing := "# my boincd\n[prefs]\nmax_ncpus_pct = 50.0\n\n[[project]]\nurl = \"https://a.example/\"\nauthenticator = \"ka\"\n"
	cases := []struct {
		name    string
		config  string
		wantErr string
		want    int
	}{
		{name: "appended, comments kept", config: existing, want: 2},
		{name: "already listed", config: existing + "\n[[project]]\nurl = \"http://127.0.0.1:18080\"\nauthenticator = \"" + fixtureKey + "\"\n", want: 2},
		{name: "listed with another key", config: existing + "\n[[project]]\nurl = \"http://127.0.0.1:18080/\"\nauthenticator = \"other\"\n", wantErr: "different account key"},
		{name: "broken config", config: "[[project]\n", wantErr: "cannot be read"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			src := importtest.Build(t, importtest.Options{StateFile: "client_state_after_report.xml"})
			dst := filepath.Join(t.TempDir(), "boincd")
			if err := os.MkdirAll(dst, 0o755); err != nil {
				t.Fatal(err)
			}
			cfgPath := filepath.Join(dst, config.FileName)
			if err := os.WriteFile(cfgPath, []byte(tc.config), 0o640); err != nil {
				t.Fatal(err)
			}
			_, err := runImport(t, src.Path, dst, false)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				if b, _ := os.ReadFile(cfgPath); string(b) != tc.config {
					t.Errorf("config changed by a refused import")
				}
				if _, err := os.Stat(filepath.Join(dst, "projects", fixtureEsc)); !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("project files copied by a refused import (%v)", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Import: %v", err)
			}
			b, err := os.ReadFile(cfgPath)
			if err != nil || !strings.HasPrefix(string(b), tc.config) {
				t.Errorf("config not appended to: %q", b)
			}
			cfg, err := config.Load(cfgPath, false, nil)
			if err != nil || len(cfg.Projects) != tc.want || *cfg.Prefs.MaxNCPUsPct != 50 {
				t.Errorf("merged config: %v, %+v", err, cfg)
			}
			if fi, err := os.Stat(cfgPath); err != nil || fi.Mode().Perm() != 0o640 {
				t.Errorf("config mode changed: %v", fi.Mode())
			}
		})
	}
}

// A project directory left over without state is filled with the
// verified copies.
func TestImportIntoLeftoverProjectDir(t *testing.T) {
	src := importtest.Build(t, importtest.Options{StateFile: "client_state_after_report.xml"})
	dst := filepath.Join(t.TempDir(), "boincd")
	proj := filepath.Join(dst, "projects", fixtureEsc)
	if err := os.MkdirAll(proj, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(proj, importtest.AppFile), []byte("stale"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := runImport(t, src.Path, dst, false); err != nil {
		t.Fatalf("Import: %v", err)
	}
	b, err := os.ReadFile(filepath.Join(proj, importtest.AppFile))
	if err != nil || string(b) != string(src.Contents[importtest.AppFile]) {
		t.Errorf("leftover file not replaced: %q %v", b, err)
	}
}

func TestImportSameDirRefused(t *testing.T) {
	src := importtest.Build(t, importtest.Options{StateFile: "client_state_after_report.xml"})
	if _, err := runImport(t, src.Path, src.Path, false); err == nil || !strings.Contains(err.Error(), "both the BOINC and the boincd directory") {
		t.Errorf("import into the BOINC directory itself: %v", err)
	}
	if _, err := runImport(t, filepath.Join(src.Path, "nope"), t.TempDir(), false); err == nil {
		t.Error("import from a missing directory succeeded")
	}
	if err := os.Remove(filepath.Join(src.Path, "client_state.xml")); err != nil {
		t.Fatal(err)
	}
	if _, err := runImport(t, src.Path, t.TempDir(), false); err == nil || !strings.Contains(err.Error(), "is it a BOINC client's data directory") {
		t.Errorf("import without client_state.xml: %v", err)
	}
}

func TestSanitizeXML(t *testing.T) {
	in := []byte("<a><stderr_out><![CDATA[bad \xff\x01 bytes\n]]></stderr_out></a>")
	root, err := parseXML("x.xml", in)
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	if got := root.kids[0].text; got != "bad \ufffd\ufffd bytes\n" {
		t.Errorf("text %q", got)
	}
}

// A running boincd (holding the state file) or a cancelled import leaves
// nothing behind.
func TestImportTargetBusyOrCancelled(t *testing.T) {
	t.Run("boincd running", func(t *testing.T) {
		src := importtest.Build(t, importtest.Options{StateFile: "client_state_task_running.xml"})
		dst := filepath.Join(t.TempDir(), "boincd")
		if err := os.MkdirAll(dst, 0o755); err != nil {
			t.Fatal(err)
		}
		st, err := statefile.Open(filepath.Join(dst, daemon.StateFileName), statefile.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		_, err = Import(context.Background(), Options{BOINCDir: src.Path, DataDir: dst})
		if !errors.Is(err, statefile.ErrLocked) {
			t.Errorf("import while boincd runs: %v", err)
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		src := importtest.Build(t, importtest.Options{StateFile: "client_state_task_running.xml"})
		dst := filepath.Join(t.TempDir(), "boincd")
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := Import(ctx, Options{BOINCDir: src.Path, DataDir: dst}); !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled import: %v", err)
		}
		for _, p := range []string{"projects/" + fixtureEsc, "projects/" + fixtureEsc + "~import", "slots/0", "slots/0~import", config.FileName} {
			if _, err := os.Stat(filepath.Join(dst, p)); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("cancelled import left %s (%v)", p, err)
			}
		}
		if snap := loadState(t, dst); len(snap.Projects) != 0 {
			t.Errorf("cancelled import committed state")
		}
	})
}
