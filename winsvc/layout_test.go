package winsvc

import (
	"slices"
	"testing"
)

func envOf(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestNewLayout(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want Layout
	}{
		{"ProgramData", map[string]string{"ProgramData": `C:\ProgramData`},
			Layout{`C:\ProgramData`, `C:\ProgramData\boincd`, `C:\ProgramData\boincd\boincd.toml`}},
		{"other drive, trailing separator", map[string]string{"ProgramData": `D:\Data\ `},
			Layout{`D:\Data`, `D:\Data\boincd`, `D:\Data\boincd\boincd.toml`}},
		{"spaces kept", map[string]string{"ProgramData": `E:\Program Data`},
			Layout{`E:\Program Data`, `E:\Program Data\boincd`, `E:\Program Data\boincd\boincd.toml`}},
		{"UNC", map[string]string{"ProgramData": `\\server\share\pd`},
			Layout{`\\server\share\pd`, `\\server\share\pd\boincd`, `\\server\share\pd\boincd\boincd.toml`}},
		{"ALLUSERSPROFILE when ProgramData is missing", map[string]string{"ALLUSERSPROFILE": `C:\ProgramData`},
			Layout{`C:\ProgramData`, `C:\ProgramData\boincd`, `C:\ProgramData\boincd\boincd.toml`}},
		{"relative ProgramData ignored", map[string]string{"ProgramData": `ProgramData`, "SystemDrive": `D:`},
			Layout{`D:\ProgramData`, `D:\ProgramData\boincd`, `D:\ProgramData\boincd\boincd.toml`}},
		{"drive-relative ignored", map[string]string{"ProgramData": `C:ProgramData`},
			Layout{`C:\ProgramData`, `C:\ProgramData\boincd`, `C:\ProgramData\boincd\boincd.toml`}},
		{"bad SystemDrive ignored", map[string]string{"SystemDrive": `1:`},
			Layout{`C:\ProgramData`, `C:\ProgramData\boincd`, `C:\ProgramData\boincd\boincd.toml`}},
		{"empty environment", nil,
			Layout{`C:\ProgramData`, `C:\ProgramData\boincd`, `C:\ProgramData\boincd\boincd.toml`}},
		{"drive root", map[string]string{"ProgramData": `F:\`},
			Layout{`F:\`, `F:\boincd`, `F:\boincd\boincd.toml`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := NewLayout(envOf(tt.env)); got != tt.want {
				t.Fatalf("NewLayout = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestIsAbsWindowsPath(t *testing.T) {
	tests := []struct {
		p    string
		want bool
	}{
		{`C:\`, true}, {`c:/x`, true}, {`\\srv\share`, true},
		{`C:`, false}, {`C:x`, false}, {`\x`, false}, {`x\y`, false}, {``, false}, {`\\\x`, false}, {`/etc`, false},
	}
	for _, tt := range tests {
		if got := IsAbsWindowsPath(tt.p); got != tt.want {
			t.Errorf("IsAbsWindowsPath(%q) = %v, want %v", tt.p, got, tt.want)
		}
	}
}

func TestJoinWindows(t *testing.T) {
	tests := []struct {
		elem []string
		want string
	}{
		{[]string{`C:\`, "boincd"}, `C:\boincd`},
		{[]string{`C:\a`, `\b`, "c"}, `C:\a\b\c`},
		{[]string{`C:\a\`, "", "b"}, `C:\a\b`},
		{[]string{"a"}, "a"},
	}
	for _, tt := range tests {
		if got := JoinWindows(tt.elem...); got != tt.want {
			t.Errorf("JoinWindows(%q) = %q, want %q", tt.elem, got, tt.want)
		}
	}
}

// The expected values are what syscall.EscapeArg returns on Windows.
func TestEscapeArg(t *testing.T) {
	tests := []struct{ in, want string }{
		{``, `""`},
		{`plain`, `plain`},
		{`C:\ProgramData\boincd`, `C:\ProgramData\boincd`},
		{`C:\Program Files\boincd`, `"C:\Program Files\boincd"`},
		{`C:\Program Files\boincd\`, `"C:\Program Files\boincd\\"`},
		{`C:\dir\`, `C:\dir\`},
		{`a"b`, `a\"b`},
		{`a\"b`, `a\\\"b`},
		{`say "hi"`, `"say \"hi\""`},
		{"tab\there", "\"tab\there\""},
		{`\\server\share\x y\\`, `"\\server\share\x y\\\\"`},
	}
	for _, tt := range tests {
		if got := EscapeArg(tt.in); got != tt.want {
			t.Errorf("EscapeArg(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestRunArgs(t *testing.T) {
	if got, want := RunArgs(`C:\ProgramData\boincd`, ""), []string{"service", "run", "--dir", `C:\ProgramData\boincd`}; !slices.Equal(got, want) {
		t.Errorf("RunArgs = %q, want %q", got, want)
	}
	if got, want := RunArgs(`D:\b`, `D:\c.toml`), []string{"service", "run", "--dir", `D:\b`, "--config", `D:\c.toml`}; !slices.Equal(got, want) {
		t.Errorf("RunArgs = %q, want %q", got, want)
	}
}

func TestCommandLine(t *testing.T) {
	tests := []struct {
		name string
		exe  string
		args []string
		want string
	}{
		{"default install", `C:\Program Files\boincd\boincd.exe`, RunArgs(`C:\ProgramData\boincd`, ""),
			`"C:\Program Files\boincd\boincd.exe" service run --dir C:\ProgramData\boincd`},
		{"data dir with space and trailing separator", `C:\boincd.exe`, RunArgs(`D:\Volunteer Data\`, ""),
			`C:\boincd.exe service run --dir "D:\Volunteer Data\\"`},
		{"config with quote", `C:\b.exe`, RunArgs(`C:\d`, `C:\my "cfg".toml`),
			`C:\b.exe service run --dir C:\d --config "C:\my \"cfg\".toml"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := CommandLine(tt.exe, tt.args)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Fatalf("CommandLine = %s\nwant          %s", got, tt.want)
			}
			if back := SplitCommandLine(got); !slices.Equal(back, append([]string{tt.exe}, tt.args...)) {
				t.Fatalf("SplitCommandLine(%s) = %q", got, back)
			}
		})
	}
}

func TestCommandLineErrors(t *testing.T) {
	tests := []struct {
		name string
		exe  string
		args []string
	}{
		{"empty exe", "", nil},
		{"quote in exe", `C:\a"b.exe`, nil},
		{"NUL in arg", `C:\b.exe`, []string{"a\x00b"}},
	}
	for _, tt := range tests {
		if _, err := CommandLine(tt.exe, tt.args); err == nil {
			t.Errorf("%s: no error", tt.name)
		}
	}
}

// The expected values follow the CommandLineToArgvW documentation's
// examples.
func TestSplitCommandLine(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{``, nil},
		{`prog`, []string{"prog"}},
		{`"C:\Program Files\p.exe"`, []string{`C:\Program Files\p.exe`}},
		{`"unterminated`, []string{`unterminated`}},
		{`p "abc" d e`, []string{"p", "abc", "d", "e"}},
		{`p a\\\b d"e f"g h`, []string{"p", `a\\\b`, "de fg", "h"}},
		{`p a\\\"b c d`, []string{"p", `a\"b`, "c", "d"}},
		{`p a\\\\"b c" d e`, []string{"p", `a\\b c`, "d", "e"}},
		{`p "a""b"`, []string{"p", `a"b`}},
		{"p \t x  ", []string{"p", "x"}},
		{`p ""`, []string{"p", ""}},
	}
	for _, tt := range tests {
		if got := SplitCommandLine(tt.in); !slices.Equal(got, tt.want) {
			t.Errorf("SplitCommandLine(%s) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func FuzzCommandLineRoundTrip(f *testing.F) {
	for _, s := range []string{``, `a b`, `C:\x y\`, `a"b`, `\\"`, `"`, "\t", `\`, `a\\\"b c`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, arg string) {
		cmd, err := CommandLine(`C:\Program Files\boincd\boincd.exe`, []string{"--dir", arg})
		if err != nil {
			return // NUL
		}
		got := SplitCommandLine(cmd)
		if want := []string{`C:\Program Files\boincd\boincd.exe`, "--dir", arg}; !slices.Equal(got, want) {
			t.Fatalf("%q -> %s -> %q", arg, cmd, got)
		}
	})
}
