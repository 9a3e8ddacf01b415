package ccconfig

import (
	"errors"
	"io/fs"
	"strings"
	"testing"
)

// statOf is a project directory holding the named files (size 10 each).
func statOf(names ...string) StatFunc {
	return func(name string) (int64, error) {
		for _, n := range names {
			if n == name {
				return 10, nil
			}
		}
		return 0, fs.ErrNotExist
	}
}

const goodAppInfo = `<app_info>
    <app>
        <name>setiathome</name>
        <user_friendly_name>SETI</user_friendly_name>
    </app>
    <file_info>
        <name>seti_opt</name>
        <executable/>
    </file_info>
    <file>
        <name>lib.so</name>
    </file>
    <app_version>
        <app_name>setiathome</app_name>
        <version_num>199</version_num>
        <plan_class>cuda</plan_class>
        <api_version>7.20.0</api_version>
        <avg_ncpus>0.25</avg_ncpus>
        <cmdline>--fast</cmdline>
        <coproc>
            <type>CUDA</type>
            <count>0.5</count>
        </coproc>
        <file_ref>
            <file_name>seti_opt</file_name>
            <main_program/>
        </file_ref>
        <file_ref>
            <file_name>lib.so</file_name>
            <open_name>lib/lib.so</open_name>
        </file_ref>
    </app_version>
</app_info>
`

func TestParseAppInfoGood(t *testing.T) {
	ai, probs := ParseAppInfo("app_info.xml", []byte(goodAppInfo), statOf("seti_opt", "lib.so"))
	if len(probs) != 0 {
		t.Fatalf("problems: %v", probs)
	}
	if len(ai.Apps) != 1 || ai.Apps[0].Name != "setiathome" || ai.Apps[0].UserFriendlyName != "SETI" {
		t.Errorf("apps = %+v", ai.Apps)
	}
	if len(ai.Files) != 2 || ai.Files[0].Name != "seti_opt" || !ai.Files[0].Executable || ai.Files[0].NBytes != 10 || ai.Files[1].Name != "lib.so" {
		t.Errorf("files = %+v", ai.Files)
	}
	if len(ai.Versions) != 1 {
		t.Fatalf("versions = %+v", ai.Versions)
	}
	v := ai.Versions[0]
	if v.AppName != "setiathome" || v.VersionNum != 199 || v.PlanClass != "cuda" || v.APIVersion != "7.20.0" ||
		v.AvgNCPUs != 0.25 || v.Cmdline != "--fast" || v.Platform != "" || v.Line != 13 {
		t.Errorf("version = %+v", v)
	}
	if v.Coproc == nil || v.Coproc.Type != "NVIDIA" || v.Coproc.Count != 0.5 {
		t.Errorf("coproc = %+v", v.Coproc)
	}
	if m, ok := v.MainProgram(); !ok || m.FileName != "seti_opt" || len(v.FileRefs) != 2 || v.FileRefs[1].OpenName != "lib/lib.so" {
		t.Errorf("file refs = %+v", v.FileRefs)
	}
}

// TestParseAppInfoProblems: each bad entry is a problem at its line, and
// the good entries beside it are still read.
func TestParseAppInfoProblems(t *testing.T) {
	const app = "<app><name>a</name></app>\n"
	const file = "<file_info><name>exe</name></file_info>\n"
	version := func(extra string) string {
		return "<app_version><app_name>a</app_name><version_num>7</version_num>" + extra +
			"<file_ref><file_name>exe</file_name><main_program/></file_ref></app_version>\n"
	}
	cases := []struct {
		name     string
		body     string // inside <app_info>, from line 2
		line     int
		msg      string
		files    int
		versions int
	}{
		{"file name with separator", app + file + "<file_info><name>sub/x</name></file_info>\n" + version(""), 4, "path separator", 1, 1},
		{"file name dot-dot", app + file + "<file_info>\n<name>..</name>\n</file_info>\n" + version(""), 5, "'..'", 1, 1},
		{"file name absolute", app + file + "<file_info><name>/etc/passwd</name></file_info>\n" + version(""), 4, "absolute path", 1, 1},
		{"file name with backslash", app + file + "<file_info><name>a\\b</name></file_info>\n" + version(""), 4, `'\\'`, 1, 1},
		{"file name with percent", app + file + "<file_info><name>a%2e</name></file_info>\n" + version(""), 4, "'%'", 1, 1},
		{"file name with control byte", app + file + "<file_info><name>a\tb</name></file_info>\n" + version(""), 4, "control byte", 1, 1},
		{"file without name", app + file + "<file_info><executable/></file_info>\n" + version(""), 4, "no <name>", 1, 1},
		{"file with URL", app + file + "<file_info><name>x</name>\n<url>http://x/y</url></file_info>\n" + version(""), 5, "Can't specify URLs", 1, 1},
		{"missing file", app + file + "<file_info><name>gone</name></file_info>\n" + version(""), 4, "does not exist: gone", 1, 1},
		{"file listed twice", app + file + file + version(""), 4, "listed twice", 1, 1},
		{"app name with separator", app + "<app><name>../a</name></app>\n" + file + version(""), 3, "path separator", 1, 1},
		{"bad version_num", app + file + version("") + "<app_version><app_name>a</app_name>\n<version_num>abc</version_num></app_version>\n", 6, "<version_num>abc</version_num>: not a whole number", 1, 1},
		{"negative avg_ncpus", app + file + version("") + "<app_version><app_name>a</app_name>\n<avg_ncpus>-1</avg_ncpus></app_version>\n", 6, "avg_ncpus", 1, 1},
		{"zero flops", app + file + version("") + "<app_version><app_name>a</app_name>\n<flops>0</flops></app_version>\n", 6, "flops", 1, 1},
		{"unknown app", app + file + version("") + "<app_version><app_name>b</app_name></app_version>\n", 5, `app "b" is not listed`, 1, 1},
		{"unlisted file", app + file + version("") + "<app_version><app_name>a</app_name><version_num>8</version_num><file_ref><file_name>other</file_name><main_program/></file_ref></app_version>\n", 5, `file "other" is not listed`, 1, 1},
		{"file_ref dot-dot", app + file + version("") + "<app_version><app_name>a</app_name><version_num>8</version_num>\n<file_ref><file_name>../exe</file_name></file_ref></app_version>\n", 6, "path separator", 1, 1},
		{"open_name dot-dot", app + file + version("") + "<app_version><app_name>a</app_name><version_num>8</version_num>\n<file_ref><file_name>exe</file_name><open_name>../../x</open_name></file_ref></app_version>\n", 6, "'..'", 1, 1},
		{"no main program", app + file + version("") + "<app_version><app_name>a</app_name><version_num>8</version_num><file_ref><file_name>exe</file_name></file_ref></app_version>\n", 5, "main_program", 1, 1},
		{"duplicate version", app + file + version("") + version(""), 5, "duplicate app version", 1, 1},
		{"coproc without count", app + file + version("") + "<app_version><app_name>a</app_name><version_num>8</version_num>\n<coproc><type>NVIDIA</type></coproc></app_version>\n", 6, "no <count>", 1, 1},
		{"platform with markup", app + file + version("") + "<app_version><app_name>a</app_name><version_num>8</version_num>\n<platform>a&lt;b</platform></app_version>\n", 6, "platform", 1, 1},
		{"unknown element", app + file + "<bogus/>\n" + version(""), 4, "unknown element <bogus>", 1, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			data := "<app_info>\n" + tc.body + "</app_info>\n"
			ai, probs := ParseAppInfo("projects/p/app_info.xml", []byte(data), statOf("exe", "x", "sub/x", "..", "/etc/passwd"))
			if len(probs) != 1 {
				t.Fatalf("problems = %v, want one", probs)
			}
			p := probs[0]
			if p.File != "projects/p/app_info.xml" || p.Line != tc.line || !strings.Contains(p.Msg, tc.msg) {
				t.Errorf("problem = %q, want line %d containing %q", p.Error(), tc.line, tc.msg)
			}
			if !strings.HasPrefix(p.Error(), "projects/p/app_info.xml line ") {
				t.Errorf("problem %q does not start with the file and line", p.Error())
			}
			if len(ai.Files) != tc.files || len(ai.Versions) != tc.versions || len(ai.Apps) != 1 {
				t.Errorf("read %d apps, %d files, %d versions; want 1, %d, %d", len(ai.Apps), len(ai.Files), len(ai.Versions), tc.files, tc.versions)
			}
		})
	}
}

// A syntax error ends the file there; what came before it is used.
func TestParseAppInfoSyntaxError(t *testing.T) {
	data := "<app_info>\n<app><name>a</name></app>\n<file_info><name>exe</name></file_info>\n" +
		"<app_version><app_name>a</app_name><file_ref><file_name>exe</file_name><main_program/></file_ref></app_version>\n" +
		"<app_version><app_name>a</oops>\n</app_info>\n"
	ai, probs := ParseAppInfo("app_info.xml", []byte(data), statOf("exe"))
	if len(probs) == 0 || probs[0].Line != 5 || !strings.Contains(probs[0].Msg, "XML syntax error") {
		t.Errorf("problems = %v, want a syntax error at line 5 first", probs)
	}
	if len(ai.Versions) != 1 || ai.Versions[0].Line != 4 {
		t.Errorf("versions = %+v, want the one before the error", ai.Versions)
	}
}

func TestParseAppInfoNoRoot(t *testing.T) {
	_, probs := ParseAppInfo("app_info.xml", []byte("<app_config/>"), statOf())
	if len(probs) != 1 || !strings.Contains(probs[0].Msg, "no <app_info>") {
		t.Errorf("problems = %v", probs)
	}
	_, probs = ParseAppInfo("app_info.xml", []byte("<app_info><app><name>a</name></app>"), statOf())
	if len(probs) != 1 || !strings.Contains(probs[0].Msg, "never closed") {
		t.Errorf("problems = %v", probs)
	}
}

// A stat error other than "missing" (a directory, say) is said too.
func TestParseAppInfoStatError(t *testing.T) {
	stat := func(string) (int64, error) { return 0, errors.New("is a directory") }
	ai, probs := ParseAppInfo("app_info.xml", []byte("<app_info><file_info><name>d</name></file_info></app_info>"), stat)
	if len(ai.Files) != 0 || len(probs) != 1 || !strings.Contains(probs[0].Msg, "is a directory") {
		t.Errorf("files %v, problems %v", ai.Files, probs)
	}
}
