package importer

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
	"github.com/boincd/boincd/boinc"
)

// fuzzSeedFile returns a file of the BOINC 7.20 captures, searched for
// upwards from the package directory up to testdata/ at the module root;
// ok is false only if they were removed, and the inline seeds still run.
func fuzzSeedFile(rel string) ([]byte, bool) {
	dir, _ := os.Getwd()
	for range 6 {
		b, err := os.ReadFile(filepath.Join(dir, "testdata", "boinc-7.20", rel))
		if err == nil {
			return b, true
		}
		dir = filepath.Dir(dir)
	}
	return nil, false
}

const fuzzStateFile = "/boinc/client_state.xml"

// FuzzParseClientState: the importer reads a BOINC directory it does not
// control. Any client_state.xml gives a ParseError naming the file, or a
// state in which every name that becomes a path passes
// boinc.ValidateFileName, every URL is canonical, every number is finite
// and every slot is a plain non-negative number.
func FuzzParseClientState(f *testing.F) {
	for _, name := range []string{"client_state_task_running.xml", "client_state_2executing_1downloading.xml", "client_state_after_report.xml"} {
		if b, ok := fuzzSeedFile(filepath.Join("client_files", name)); ok {
			f.Add(b)
		}
	}
	for _, s := range []string{
		"<client_state>\n<project>\n<master_url>http://a/</master_url>\n</project>\n<file>\n<name>../x</name>\n</file>\n</client_state>",
		"<client_state><project><master_url>HTTP://A//b</master_url><project_name>p</project_name></project>" +
			"<app><name>a</name></app><file><name>f</name><nbytes>1e3</nbytes><status>1</status><stderr_out>\x01\xff</stderr_out></file>" +
			"<app_version><app_name>a</app_name><version_num>1</version_num><file_ref><file_name>f</file_name><open_name>d/f</open_name><main_program/></file_ref></app_version>" +
			"<workunit><name>w</name><app_name>a</app_name><file_ref><file_name>f</file_name></file_ref></workunit>" +
			"<result><name>r</name><wu_name>w</wu_name><state>5</state><ready_to_report/><file_ref><file_name>o</file_name></file_ref></result>" +
			"<active_task_set><active_task><project_master_url>http://a/b</project_master_url><result_name>r</result_name><slot>3</slot><checkpoint_cpu_time>nan</checkpoint_cpu_time></active_task></active_task_set></client_state>",
		"<file><name>x</name></file>", "<client_state><host_info><p_ncpus>1e400</p_ncpus></host_info></client_state>",
		"<client_state>" + strings.Repeat("<a>", 70) + "</client_state>", "<client_state/><client_state/>", "&amp;", "",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		root, err := parseXML(fuzzStateFile, data)
		var cs *clientState
		if err == nil {
			if root == nil {
				t.Fatal("no tree and no error")
			}
			cs, err = interpretClientState(fuzzStateFile, root)
		}
		if err != nil {
			checkParseError(t, err)
			return
		}
		checkName := func(what, name string, sub bool) {
			if e := boinc.ValidateFileName(name, sub); e != nil {
				t.Fatalf("%s %q accepted: %v", what, name, e)
			}
		}
		checkRefs := func(what string, refs []boinc.FileRef) {
			for _, r := range refs {
				checkName(what+" file_name", r.FileName, false)
				if r.OpenName != "" {
					checkName(what+" open_name", r.OpenName, true)
				}
			}
		}
		for _, p := range cs.projects {
			checkURL(t, p.p.MasterURL)
			for _, fl := range p.files {
				checkName("file", fl.f.Name, false)
				if !finiteNonNeg(fl.f.NBytes) || !finiteNonNeg(fl.f.MaxNBytes) {
					t.Fatalf("file %q sizes %v/%v accepted", fl.f.Name, fl.f.NBytes, fl.f.MaxNBytes)
				}
			}
			for _, v := range p.versions {
				checkRefs("app_version", v.FileRefs)
			}
			for _, w := range p.wus {
				checkRefs("workunit", w.InputFiles)
			}
			for _, r := range p.results {
				checkRefs("result", r.r.OutputFiles)
			}
		}
		for _, at := range cs.active {
			if at.slot < 0 || at.slot > 100000 {
				t.Fatalf("slot %d accepted", at.slot)
			}
			if at.projectURL != "" {
				checkURL(t, at.projectURL)
			}
			for _, v := range []float64{at.ckptCPU, at.ckptElapsed, at.ckptFractionDone} {
				if math.IsNaN(v) || math.IsInf(v, 0) {
					t.Fatalf("active task %q: checkpoint value %v accepted", at.resultName, v)
				}
			}
		}
	})
}

func finiteNonNeg(v float64) bool { return v >= 0 && !math.IsInf(v, 0) }

func checkURL(t *testing.T, u string) {
	t.Helper()
	if c, err := boinc.CanonicalMasterURL(u); err != nil || c != u {
		t.Fatalf("project URL %q accepted (canonical %q, %v)", u, c, err)
	}
}

func checkParseError(t *testing.T, err error) {
	t.Helper()
	var pe *ParseError
	if !errors.As(err, &pe) || pe.File == "" || !strings.HasPrefix(err.Error(), pe.File) {
		t.Fatalf("error %q (%T) does not name the file", err, err)
	}
}

// FuzzParseAccountFile: an account_*.xml file gives a ParseError naming
// it, or an account with a canonical URL and a key that is safe to write
// into boincd.toml.
func FuzzParseAccountFile(f *testing.F) {
	if b, ok := fuzzSeedFile("client_files/account_127.0.0.1_18080.xml"); ok {
		f.Add(b)
	}
	for _, s := range []string{
		"<account>\n<master_url>http://127.0.0.1:18080/</master_url>\n<authenticator>0123</authenticator>\n<project_preferences><resource_share>50</resource_share><x/></project_preferences>\n</account>",
		"<account><master_url>ftp://x/</master_url></account>",
		"<account><master_url>x</master_url><authenticator>a\"b</authenticator></account>",
		"<account><master_url>x</master_url><authenticator>k</authenticator><project_preferences><resource_share>inf</resource_share></project_preferences></account>",
		"<acct/>",
	} {
		f.Add([]byte(s))
	}
	path := filepath.Join(f.TempDir(), "account_x.xml")
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		a, err := parseAccountFile(path)
		if err != nil {
			if a != nil {
				t.Fatal("account and error both returned")
			}
			checkParseError(t, err)
			return
		}
		checkURL(t, a.masterURL)
		if a.authenticator == "" || strings.ContainsAny(a.authenticator, " \t\r\n<>&\"\\") {
			t.Fatalf("account key %q accepted", a.authenticator)
		}
		if math.IsNaN(a.resourceShare) || math.IsInf(a.resourceShare, 0) {
			t.Fatalf("resource share %v accepted", a.resourceShare)
		}
		// What the importer writes into boincd.toml must read back as
		// the same strings.
		var back struct{ URL, Key, Name string }
		doc := "URL = " + tomlString(a.masterURL) + "\nKey = " + tomlString(a.authenticator) + "\nName = " + tomlString(a.projectName) + "\n"
		if _, err := toml.Decode(doc, &back); err != nil || back.URL != a.masterURL || back.Key != a.authenticator || back.Name != a.projectName {
			t.Fatalf("TOML round trip of %q: %+v, %v", doc, back, err)
		}
	})
}

// FuzzTOMLString: every string the importer writes into boincd.toml (a
// project name, URL or key taken from the BOINC files) reads back
// unchanged, whatever bytes it holds.
func FuzzTOMLString(f *testing.F) {
	for _, s := range []string{"plain", `q"uote\back`, "tab\tnl\n\x00\x7f", "caf\u00e9 \U0001F600", "\xff\xfe", "'''", `"""`, "\u2028"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var back struct{ V string }
		doc := "V = " + tomlString(s) + "\n"
		_, err := toml.Decode(doc, &back)
		// Each invalid UTF-8 byte becomes one U+FFFD (TOML is UTF-8).
		var want strings.Builder
		for _, r := range s {
			want.WriteRune(r)
		}
		if err != nil || back.V != want.String() {
			t.Fatalf("%q written as %q read back as %q (%v)", s, doc, back.V, err)
		}
	})
}
