// Package importtest builds C++ BOINC client data directories for tests
// of the importer, from the real BOINC 7.20 captures in
// testdata/boinc-7.20 at the module root: client_state.xml, the account and master
// files, the project directory with the files the state says are present
// (the real signed app file; generated inputs whose MD5 is written into
// the state), and a slot directory with a checkpoint for every active
// task.
package importtest

import (
	"crypto/md5"
	"encoding/hex"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/boincd/boincd/boinc"
)

// FixtureURL is the master URL of the project in the captures.
const FixtureURL = "http://127.0.0.1:18080/"

// AppFile is the signed app file of the captures.
const AppFile = "refapp_1.00_x86_64-pc-linux-gnu.sh"

// CheckpointFile is the file written into each active task's slot to
// stand for the app's checkpoint.
const CheckpointFile = "checkpoint.dat"

// FixtureDir returns the module's testdata/boinc-7.20, searched for
// upwards from the test's package directory so that tests at any depth
// find it.
func FixtureDir(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		d := filepath.Join(dir, "testdata", "boinc-7.20")
		if fi, err := os.Stat(filepath.Join(d, "client_files")); err == nil && fi.IsDir() {
			return d
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("BOINC 7.20 captures (testdata/boinc-7.20 at the module root) not found")
		}
		dir = parent
	}
}

// Options shape the directory.
type Options struct {
	// StateFile is the capture under client_files/ to use as
	// client_state.xml.
	StateFile string
	// URL, if set, replaces the captures' master URL everywhere.
	URL string
	// Edit, if set, rewrites the state text before files are derived
	// from it.
	Edit func(state string) string
	// Missing names present files that are not written.
	Missing []string
	// Corrupt names present files written with the right size but the
	// wrong content.
	Corrupt []string
	// NoAccount leaves out the account file.
	NoAccount bool
}

// Dir is a built BOINC data directory.
type Dir struct {
	Path       string
	URL        string
	ProjectDir string
	// State is the client_state.xml written.
	State string
	// Contents maps each written project file to its bytes.
	Contents map[string][]byte
	// Slots maps a slot number to the result it holds.
	Slots map[int]string
}

// Build writes the directory under a new temporary directory.
func Build(t testing.TB, o Options) *Dir {
	t.Helper()
	fx := FixtureDir(t)
	read := func(rel string) string {
		b, err := os.ReadFile(filepath.Join(fx, rel))
		if err != nil {
			t.Fatalf("fixture: %v", err)
		}
		return string(b)
	}
	url := FixtureURL
	state := read("client_files/" + o.StateFile)
	account := read("client_files/account_127.0.0.1_18080.xml")
	master := read("client_files/master_127.0.0.1_18080.xml")
	if o.URL != "" {
		url = o.URL
		state = strings.ReplaceAll(state, FixtureURL, url)
		account = strings.ReplaceAll(account, FixtureURL, url)
		master = strings.ReplaceAll(master, FixtureURL, url)
	}
	if o.Edit != nil {
		state = o.Edit(state)
	}
	esc := boinc.EscapeProjectURL(url)
	d := &Dir{Path: filepath.Join(t.TempDir(), "boinc-client"), URL: url, Contents: map[string][]byte{}, Slots: map[int]string{}}
	d.ProjectDir = filepath.Join(d.Path, "projects", esc)
	if err := os.MkdirAll(d.ProjectDir, 0o755); err != nil {
		t.Fatal(err)
	}
	skip := map[string]bool{}
	for _, m := range o.Missing {
		skip[m] = true
	}
	corrupt := map[string]bool{}
	for _, c := range o.Corrupt {
		corrupt[c] = true
	}
	app := []byte(read("signing/" + AppFile))
	for _, f := range elements(state, "file") {
		name := field(f, "name")
		if field(f, "status") != "1" || skip[name] {
			continue
		}
		var data []byte
		switch {
		case name == AppFile:
			data = app
		default:
			n, err := strconv.ParseFloat(field(f, "nbytes"), 64)
			if err != nil {
				t.Fatalf("fixture file %s: nbytes: %v", name, err)
			}
			data = content(name, int(n))
			if !corrupt[name] {
				sum := md5.Sum(data)
				state = setField(state, f, "md5_cksum", hex.EncodeToString(sum[:]))
			}
		}
		if corrupt[name] {
			data = append([]byte(nil), data...)
			data[0] ^= 0xff
		}
		if err := os.WriteFile(filepath.Join(d.ProjectDir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
		d.Contents[name] = data
	}
	for _, at := range elements(state, "active_task") {
		slot, err := strconv.Atoi(field(at, "slot"))
		if err != nil {
			t.Fatalf("fixture active_task slot: %v", err)
		}
		res := field(at, "result_name")
		d.Slots[slot] = res
		dir := filepath.Join(d.Path, "slots", strconv.Itoa(slot))
		files := map[string]string{
			"init_data.xml":       "<app_init_data>\n<result_name>" + res + "</result_name>\n<slot>" + strconv.Itoa(slot) + "</slot>\n</app_init_data>\n",
			"in":                  "<soft_link>../../projects/" + esc + "/input</soft_link>\n",
			"stderr.txt":          "refapp: start\n",
			CheckpointFile:        "checkpoint of " + res + "\n",
			"boinc_finish_called": "0\n",
		}
		if err := os.MkdirAll(filepath.Join(dir, "sub"), 0o771); err != nil {
			t.Fatal(err)
		}
		files["sub/state"] = "nested checkpoint of " + res + "\n"
		for name, body := range files {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		// A link out of the slot must never be followed by the import.
		if err := os.Symlink("/etc/passwd", filepath.Join(dir, "escape")); err != nil {
			t.Fatal(err)
		}
	}
	d.State = state
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(d.Path, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("client_state.xml", state)
	if !o.NoAccount {
		write("account_"+esc+".xml", account)
	}
	write("master_"+esc+".xml", master)
	write("lockfile", "")
	return d
}

// content is deterministic filler for a generated input file.
func content(name string, n int) []byte {
	seed := []byte("input " + name + "\n")
	out := make([]byte, n)
	for i := range out {
		out[i] = seed[i%len(seed)]
	}
	return out
}

// elements returns the text of every <tag>…</tag> in s.
func elements(s, tag string) []string {
	var out []string
	open, close := "<"+tag+">", "</"+tag+">"
	for {
		i := strings.Index(s, open)
		if i < 0 {
			return out
		}
		j := strings.Index(s[i:], close)
		if j < 0 {
			return out
		}
		out = append(out, s[i:i+j+len(close)])
		s = s[i+j+len(close):]
	}
}

// field returns the trimmed text of <tag> inside elem.
func field(elem, tag string) string {
	open, close := "<"+tag+">", "</"+tag+">"
	i := strings.Index(elem, open)
	if i < 0 {
		return ""
	}
	j := strings.Index(elem[i:], close)
	if j < 0 {
		return ""
	}
	return strings.TrimSpace(elem[i+len(open) : i+j])
}

// setField replaces the value of <tag> inside the element elem of s.
func setField(s, elem, tag, value string) string {
	open, close := "<"+tag+">", "</"+tag+">"
	i := strings.Index(elem, open)
	if i < 0 {
		return s
	}
	j := strings.Index(elem[i:], close)
	edited := elem[:i+len(open)] + value + elem[i+j:]
	return strings.Replace(s, elem, edited, 1)
}

// SetResultField sets <tag> of the named result in a state text, adding
// the element when the result lacks it.
func SetResultField(t testing.TB, state, result, tag, value string) string {
	t.Helper()
	for _, r := range elements(state, "result") {
		if field(r, "name") != result {
			continue
		}
		if strings.Contains(r, "<"+tag+">") {
			return setField(state, r, tag, value)
		}
		edited := strings.Replace(r, "</result>", "    <"+tag+">"+value+"</"+tag+">\n</result>", 1)
		return strings.Replace(state, r, edited, 1)
	}
	t.Fatalf("importtest: no result %q in the state", result)
	return state
}

// AddFileFlag adds an empty flag element (e.g. "uploaded") to the named
// <file>.
func AddFileFlag(t testing.TB, state, file, flag string) string {
	t.Helper()
	for _, f := range elements(state, "file") {
		if field(f, "name") != file {
			continue
		}
		edited := strings.Replace(f, "</file>", "    <"+flag+"/>\n</file>", 1)
		return strings.Replace(state, f, edited, 1)
	}
	t.Fatalf("importtest: no file %q in the state", file)
	return state
}

// SetFileField sets <tag> of the named <file>.
func SetFileField(t testing.TB, state, file, tag, value string) string {
	t.Helper()
	for _, f := range elements(state, "file") {
		if field(f, "name") == file {
			return setField(state, f, tag, value)
		}
	}
	t.Fatalf("importtest: no file %q in the state", file)
	return state
}
