package container

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// instruction is one logical Dockerfile instruction (continuations joined).
type instruction struct {
	Line  int      // line of the instruction's first physical line
	Cmd   string   // upper case: FROM, RUN, COPY...
	Flags []string // leading --name=value options (COPY --from=build)
	Args  string   // the rest, trimmed
}

// stage is a FROM and the instructions up to the next FROM.
type stage struct {
	Image, Name string
	Instrs      []instruction
}

var knownInstructions = map[string]bool{
	"ADD": true, "ARG": true, "CMD": true, "COPY": true, "ENTRYPOINT": true, "ENV": true,
	"EXPOSE": true, "FROM": true, "HEALTHCHECK": true, "LABEL": true, "MAINTAINER": true,
	"ONBUILD": true, "RUN": true, "SHELL": true, "STOPSIGNAL": true, "USER": true,
	"VOLUME": true, "WORKDIR": true,
}

var directiveRE = regexp.MustCompile(`^#\s*([A-Za-z]+)\s*=\s*(\S*)\s*$`)

// parseDockerfile splits a Dockerfile into instructions the way BuildKit
// does for the features this repository uses: parser directives at the top
// (escape, syntax, check), comment lines (also inside a continuation, where
// they are dropped), escape-character line continuations, and leading
// --flags. Heredocs are refused rather than misread.
func parseDockerfile(name string, r io.Reader) ([]instruction, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	escape := byte('\\')
	directives := true
	var out []instruction
	var cur strings.Builder
	start := 0
	n := 0
	for sc.Scan() {
		n++
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		if directives {
			if m := directiveRE.FindStringSubmatch(trimmed); m != nil {
				switch strings.ToLower(m[1]) {
				case "escape":
					if m[2] != "\\" && m[2] != "`" {
						return nil, fmt.Errorf("%s:%d: escape directive %q: want \\ or `", name, n, m[2])
					}
					escape = m[2][0]
					continue
				case "syntax", "check":
					continue
				}
			}
			directives = false
		}
		if strings.HasPrefix(trimmed, "#") {
			continue
		}
		if trimmed == "" {
			continue
		}
		if cur.Len() == 0 {
			start = n
		}
		body := strings.TrimRight(line, " \t")
		if len(body) > 0 && body[len(body)-1] == escape {
			cur.WriteString(body[:len(body)-1])
			cur.WriteByte(' ')
			continue
		}
		cur.WriteString(body)
		ins, err := splitInstruction(name, start, cur.String())
		if err != nil {
			return nil, err
		}
		out = append(out, ins)
		cur.Reset()
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: reading: %w", name, err)
	}
	if cur.Len() > 0 {
		return nil, fmt.Errorf("%s:%d: file ends inside a line continuation", name, start)
	}
	return out, nil
}

func splitInstruction(name string, line int, text string) (instruction, error) {
	text = strings.TrimSpace(text)
	word, rest, _ := strings.Cut(text, " ")
	ins := instruction{Line: line, Cmd: strings.ToUpper(word)}
	if !knownInstructions[ins.Cmd] {
		return ins, fmt.Errorf("%s:%d: unknown instruction %q", name, line, word)
	}
	rest = strings.TrimSpace(rest)
	for strings.HasPrefix(rest, "--") {
		flag, after, _ := strings.Cut(rest, " ")
		ins.Flags = append(ins.Flags, flag)
		rest = strings.TrimSpace(after)
	}
	if strings.HasPrefix(rest, "<<") {
		return ins, fmt.Errorf("%s:%d: %s heredoc: not supported by this parser", name, line, ins.Cmd)
	}
	ins.Args = rest
	return ins, nil
}

// stages groups instructions by FROM; ARGs before the first FROM are global.
func stages(name string, ins []instruction) ([]stage, error) {
	var out []stage
	for _, in := range ins {
		if in.Cmd == "FROM" {
			f := strings.Fields(in.Args)
			st := stage{}
			switch {
			case len(f) == 1:
				st.Image = f[0]
			case len(f) == 3 && strings.EqualFold(f[1], "AS"):
				st.Image, st.Name = f[0], f[2]
			default:
				return nil, fmt.Errorf("%s:%d: FROM %q: want IMAGE [AS NAME]", name, in.Line, in.Args)
			}
			out = append(out, st)
			continue
		}
		if len(out) == 0 {
			if in.Cmd != "ARG" {
				return nil, fmt.Errorf("%s:%d: %s before the first FROM", name, in.Line, in.Cmd)
			}
			continue
		}
		out[len(out)-1].Instrs = append(out[len(out)-1].Instrs, in)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no FROM", name)
	}
	return out, nil
}

// execForm decodes a JSON-array (exec form) argument list.
func execForm(in instruction) ([]string, error) {
	if !strings.HasPrefix(in.Args, "[") {
		return nil, fmt.Errorf("line %d: %s %s: shell form, want exec form (a JSON array)", in.Line, in.Cmd, in.Args)
	}
	var argv []string
	if err := json.Unmarshal([]byte(in.Args), &argv); err != nil {
		return nil, fmt.Errorf("line %d: %s: exec form is not a JSON string array: %w", in.Line, in.Cmd, err)
	}
	return argv, nil
}

// words splits shell-like text on blanks, honouring quotes (enough for ENV
// and for finding flags in a RUN line).
func words(s string) ([]string, error) {
	var out []string
	var cur strings.Builder
	var quote rune
	inWord := false
	for _, r := range s {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(r)
		case r == '"' || r == '\'':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			if inWord {
				out = append(out, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("unterminated %c quote in %q", quote, s)
	}
	if inWord {
		out = append(out, cur.String())
	}
	return out, nil
}

// envPairs decodes ENV (KEY=VALUE ... or the legacy KEY VALUE form).
func envPairs(in instruction) (map[string]string, error) {
	w, err := words(in.Args)
	if err != nil {
		return nil, fmt.Errorf("line %d: ENV: %w", in.Line, err)
	}
	m := map[string]string{}
	if len(w) >= 1 && !strings.Contains(w[0], "=") {
		_, val, _ := strings.Cut(in.Args, " ")
		m[w[0]] = strings.TrimSpace(val)
		return m, nil
	}
	for _, kv := range w {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return nil, fmt.Errorf("line %d: ENV %q: want KEY=VALUE", in.Line, kv)
		}
		m[k] = v
	}
	return m, nil
}

func flagValue(in instruction, name string) (string, bool) {
	for _, f := range in.Flags {
		if v, ok := strings.CutPrefix(f, "--"+name+"="); ok {
			return v, true
		}
	}
	return "", false
}

func TestParseDockerfile(t *testing.T) {
	tests := []struct {
		name    string
		src     string
		want    []instruction
		wantErr string
	}{
		{
			name: "continuation with a comment and a blank line inside",
			src:  "FROM a AS b\nRUN one \\\n# dropped\n\n    two\nUSER 1:1\n",
			want: []instruction{
				{Line: 1, Cmd: "FROM", Args: "a AS b"},
				{Line: 2, Cmd: "RUN", Args: "one      two"},
				{Line: 6, Cmd: "USER", Args: "1:1"},
			},
		},
		{
			name: "escape directive and flags",
			src:  "# escape=`\n# syntax=docker/dockerfile:1\nfrom x\ncopy --from=build --chmod=0755 /a `\n /b\n",
			want: []instruction{
				{Line: 3, Cmd: "FROM", Args: "x"},
				{Line: 4, Cmd: "COPY", Flags: []string{"--from=build", "--chmod=0755"}, Args: "/a   /b"},
			},
		},
		{
			name: "a directive after an instruction is a comment",
			src:  "FROM x\n# escape=`\nRUN a `\n",
			want: []instruction{{Line: 1, Cmd: "FROM", Args: "x"}, {Line: 3, Cmd: "RUN", Args: "a `"}},
		},
		{name: "unknown instruction", src: "FROM x\nRUNN y\n", wantErr: `t:2: unknown instruction "RUNN"`},
		{name: "ends in a continuation", src: "FROM x\nRUN a \\\n", wantErr: "t:2: file ends inside a line continuation"},
		{name: "heredoc", src: "FROM x\nRUN <<EOF\n", wantErr: "t:2: RUN heredoc"},
		{name: "bad escape", src: "# escape=x\nFROM x\n", wantErr: "t:1: escape directive"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseDockerfile("t", strings.NewReader(tt.src))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want it to contain %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %d instructions %+v, want %+v", len(got), got, tt.want)
			}
			for i := range got {
				g, w := got[i], tt.want[i]
				if g.Line != w.Line || g.Cmd != w.Cmd || g.Args != w.Args || !slices.Equal(g.Flags, w.Flags) {
					t.Errorf("instruction %d = %+v, want %+v", i, g, w)
				}
			}
		})
	}
}

func TestWordsAndEnv(t *testing.T) {
	tests := []struct {
		args    string
		want    map[string]string
		wantErr bool
	}{
		{args: `A=1 B="two words" C='x'`, want: map[string]string{"A": "1", "B": "two words", "C": "x"}},
		{args: `LEGACY some value`, want: map[string]string{"LEGACY": "some value"}},
		{args: `A="open`, wantErr: true},
		{args: `A=1 junk`, wantErr: true},
	}
	for _, tt := range tests {
		got, err := envPairs(instruction{Cmd: "ENV", Args: tt.args})
		if (err != nil) != tt.wantErr {
			t.Errorf("ENV %s: err = %v, wantErr %v", tt.args, err, tt.wantErr)
			continue
		}
		if err == nil && !mapsEqual(got, tt.want) {
			t.Errorf("ENV %s = %v, want %v", tt.args, got, tt.want)
		}
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func loadDockerfile(t *testing.T) []stage {
	t.Helper()
	f, err := os.Open("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ins, err := parseDockerfile("Dockerfile", f)
	if err != nil {
		t.Fatal(err)
	}
	st, err := stages("Dockerfile", ins)
	if err != nil {
		t.Fatal(err)
	}
	if len(st) < 2 {
		t.Fatalf("Dockerfile has %d stage(s), want a build stage and a runtime stage", len(st))
	}
	return st
}

// secretLike matches source paths that must never be copied into an image:
// account keys, the GUI RPC password, private keys, dotenv files.
var secretLike = regexp.MustCompile(`(?i)(account_key|authenticator|gui_rpc_auth\.cfg|remote_hosts\.cfg|\.key$|\.pem$|(^|/)\.env$|id_rsa|id_ed25519|secret)`)

// credentialVar matches ENV/ARG names that would bake a credential into an
// image layer (a *_FILE variable naming a mounted secret is fine).
var credentialVar = regexp.MustCompile(`(?i)(AUTHENTICATOR|ACCOUNT_KEY|PASSWORD|PASSWD|TOKEN|SECRET)`)

func TestDockerfile(t *testing.T) {
	st := loadDockerfile(t)
	build, final := st[0], st[len(st)-1]

	checks := []struct {
		name  string
		check func() error
	}{
		{"build stage is golang bookworm", func() error {
			if !strings.HasPrefix(build.Image, "golang:") || !strings.HasSuffix(build.Image, "-bookworm") {
				return fmt.Errorf("build stage FROM %s, want golang:<version>-bookworm", build.Image)
			}
			if build.Name == "" {
				return errors.New("build stage has no name (FROM ... AS build)")
			}
			return nil
		}},
		{"build stage sets CGO_ENABLED=1", func() error {
			for _, in := range build.Instrs {
				switch in.Cmd {
				case "ENV":
					env, err := envPairs(in)
					if err != nil {
						return err
					}
					if v, ok := env["CGO_ENABLED"]; ok {
						if v != "1" {
							return fmt.Errorf("line %d: CGO_ENABLED=%s, want 1 (go-nvml needs cgo)", in.Line, v)
						}
						return nil
					}
				case "RUN":
					if strings.Contains(in.Args, "CGO_ENABLED=1") {
						return nil
					}
				}
			}
			return errors.New("no CGO_ENABLED=1 in the build stage")
		}},
		{"go build is trimmed and stripped", func() error {
			for _, in := range build.Instrs {
				if in.Cmd != "RUN" || !strings.Contains(in.Args, "go build") {
					continue
				}
				w, err := words(in.Args)
				if err != nil {
					return fmt.Errorf("line %d: %w", in.Line, err)
				}
				if !slices.Contains(w, "-trimpath") {
					return fmt.Errorf("line %d: go build without -trimpath", in.Line)
				}
				i := slices.Index(w, "-ldflags")
				if i < 0 || i+1 >= len(w) || w[i+1] != "-s -w" {
					return fmt.Errorf("line %d: go build without -ldflags \"-s -w\"", in.Line)
				}
				if !slices.Contains(w, "./cmd/boincd") {
					return fmt.Errorf("line %d: go build does not build ./cmd/boincd", in.Line)
				}
				return nil
			}
			return errors.New("no go build in the build stage")
		}},
		{"runtime is debian bookworm-slim", func() error {
			if final.Image != "debian:bookworm-slim" {
				return fmt.Errorf("final stage FROM %s, want debian:bookworm-slim (glibc for cgo and the science apps)", final.Image)
			}
			return nil
		}},
		{"final USER is numeric and not root", func() error {
			user := ""
			for _, in := range final.Instrs {
				if in.Cmd == "USER" {
					user = in.Args
				}
			}
			if user == "" {
				return errors.New("final stage has no USER: it would run as root")
			}
			uid, gid, hasGID := strings.Cut(user, ":")
			ids := []string{uid}
			if hasGID {
				ids = append(ids, gid)
			}
			for _, id := range ids {
				n, err := strconv.ParseUint(id, 10, 32)
				if err != nil {
					return fmt.Errorf("USER %s: %q is not numeric (Kubernetes runAsNonRoot cannot verify a name)", user, id)
				}
				if n == 0 {
					return fmt.Errorf("USER %s: root", user)
				}
			}
			if uid != "10001" {
				return fmt.Errorf("USER %s: want uid 10001, which the Kubernetes and Nomad manifests use", user)
			}
			return nil
		}},
		{"no credentials copied or baked in", func() error {
			for si, s := range st {
				for _, in := range s.Instrs {
					switch in.Cmd {
					case "COPY", "ADD":
						w, err := words(in.Args)
						if err != nil {
							return fmt.Errorf("line %d: %w", in.Line, err)
						}
						if len(w) < 2 {
							return fmt.Errorf("line %d: %s %s: want SRC... DEST", in.Line, in.Cmd, in.Args)
						}
						for _, src := range w[:len(w)-1] {
							if secretLike.MatchString(path.Clean(src)) {
								return fmt.Errorf("line %d: %s %s copies what looks like a credential", in.Line, in.Cmd, src)
							}
							if in.Cmd == "ADD" && strings.Contains(src, "://") {
								return fmt.Errorf("line %d: ADD %s fetches from the network unpinned", in.Line, src)
							}
						}
						if _, fromStage := flagValue(in, "from"); si == len(st)-1 && !fromStage {
							return fmt.Errorf("line %d: the runtime stage copies from the build context (%s); only built artifacts belong there", in.Line, in.Args)
						}
					case "ENV", "ARG":
						w, err := words(in.Args)
						if err != nil {
							return fmt.Errorf("line %d: %w", in.Line, err)
						}
						for _, kv := range w {
							k, v, _ := strings.Cut(kv, "=")
							if credentialVar.MatchString(k) && !strings.HasSuffix(k, "_FILE") && v != "" {
								return fmt.Errorf("line %d: %s %s bakes a credential into the image", in.Line, in.Cmd, k)
							}
						}
					}
				}
			}
			return nil
		}},
		{"ENTRYPOINT is exec form", func() error {
			var ep *instruction
			for i := range final.Instrs {
				if final.Instrs[i].Cmd == "ENTRYPOINT" {
					ep = &final.Instrs[i]
				}
			}
			if ep == nil {
				return errors.New("no ENTRYPOINT")
			}
			argv, err := execForm(*ep)
			if err != nil {
				return err
			}
			want := []string{"/usr/bin/boincd", "--dir", "/var/lib/boincd"}
			if !slices.Equal(argv, want) {
				return fmt.Errorf("ENTRYPOINT %q, want %q (the manifests append --config to it)", argv, want)
			}
			return nil
		}},
		{"STOPSIGNAL is SIGTERM", func() error {
			for _, in := range final.Instrs {
				if in.Cmd == "STOPSIGNAL" {
					if in.Args != "SIGTERM" {
						return fmt.Errorf("line %d: STOPSIGNAL %s, want SIGTERM (boincd's graceful stop)", in.Line, in.Args)
					}
					return nil
				}
			}
			return errors.New("no STOPSIGNAL")
		}},
		{"data directory is a volume and the workdir", func() error {
			vol, wd := false, ""
			for _, in := range final.Instrs {
				switch in.Cmd {
				case "VOLUME":
					var dirs []string
					if strings.HasPrefix(in.Args, "[") {
						v, err := execForm(in)
						if err != nil {
							return err
						}
						dirs = v
					} else {
						dirs = strings.Fields(in.Args)
					}
					vol = vol || slices.Contains(dirs, "/var/lib/boincd")
				case "WORKDIR":
					wd = in.Args
				}
			}
			if !vol {
				return errors.New("no VOLUME /var/lib/boincd")
			}
			if wd != "/var/lib/boincd" {
				return fmt.Errorf("WORKDIR %q, want /var/lib/boincd", wd)
			}
			return nil
		}},
		{"nothing exposed", func() error {
			for _, in := range final.Instrs {
				if in.Cmd == "EXPOSE" {
					return fmt.Errorf("line %d: EXPOSE %s: GUI RPC is loopback-only by design", in.Line, in.Args)
				}
			}
			return nil
		}},
		{"JSON logs", func() error {
			for _, in := range final.Instrs {
				if in.Cmd == "ENV" {
					env, err := envPairs(in)
					if err != nil {
						return err
					}
					if env["BOINCD_LOG_FORMAT"] == "json" {
						return nil
					}
				}
			}
			return errors.New("BOINCD_LOG_FORMAT=json not set: auto picks text outside systemd")
		}},
	}
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			if err := c.check(); err != nil {
				t.Error(err)
			}
		})
	}
}

func TestDockerignore(t *testing.T) {
	b, err := os.ReadFile("Dockerfile.dockerignore")
	if err != nil {
		t.Fatal(err)
	}
	var patterns []string
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			patterns = append(patterns, l)
		}
	}
	for _, want := range []string{".git", "**/*.key", "**/*.pem", "**/account_key*", "**/gui_rpc_auth.cfg", "**/.env"} {
		if !slices.Contains(patterns, want) {
			t.Errorf("Dockerfile.dockerignore lacks %q", want)
		}
	}
	for _, p := range patterns {
		if strings.HasPrefix(p, "!") {
			t.Errorf("Dockerfile.dockerignore re-includes %q: keep the exclusions unconditional", p)
		}
		if strings.Contains(p, ".go") || p == "go.mod" || p == "go.sum" {
			t.Errorf("Dockerfile.dockerignore excludes %q, which the build needs", p)
		}
	}
}

// TestDockerBuild builds and runs the image. It needs docker and network
// access for the base images, so it only runs with BOINCD_TEST_DOCKER=1.
func TestDockerBuild(t *testing.T) {
	if os.Getenv("BOINCD_TEST_DOCKER") != "1" {
		t.Skip("set BOINCD_TEST_DOCKER=1 to build the image (needs docker and the base images)")
	}
	docker, err := exec.LookPath("docker")
	if err != nil {
		t.Skip("docker not installed")
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("repository root %s: %v", root, err)
	}
	tag := fmt.Sprintf("boincd-test:%d", os.Getpid())
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(t.Context(), docker, args...)
		cmd.Dir = root
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("docker %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	run("build", "-f", "packaging/container/Dockerfile", "-t", tag, ".")
	t.Cleanup(func() {
		// t.Context is already cancelled during cleanup.
		if out, err := exec.Command(docker, "image", "rm", "-f", tag).CombinedOutput(); err != nil {
			t.Logf("docker image rm %s: %v\n%s", tag, err, out)
		}
	})
	if out := run("run", "--rm", tag, "version"); !strings.HasPrefix(out, "boincd ") {
		t.Errorf("boincd version in the image printed %q", out)
	}
	if out := strings.TrimSpace(run("run", "--rm", "--entrypoint", "/usr/bin/id", tag, "-u")); out != "10001" {
		t.Errorf("image runs as uid %q, want 10001", out)
	}
	var cfg []struct {
		Config struct {
			User       string
			StopSignal string
			Entrypoint []string
		}
	}
	if err := json.Unmarshal([]byte(run("image", "inspect", tag)), &cfg); err != nil || len(cfg) != 1 {
		t.Fatalf("docker image inspect: %v (%d images)", err, len(cfg))
	}
	if c := cfg[0].Config; c.User != "10001:10001" || c.StopSignal != "SIGTERM" || len(c.Entrypoint) == 0 || c.Entrypoint[0] != "/usr/bin/boincd" {
		t.Errorf("image config %+v", c)
	}
}
