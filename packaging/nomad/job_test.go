package nomad

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"text/template"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/zclconf/go-cty/cty/convert"
	"github.com/zclconf/go-cty/cty/gocty"

	"github.com/boincd/boincd/config"
)

// The structs below mirror the subset of the Nomad jobspec (and of the
// docker driver's config block) that boincd.nomad.hcl uses, with gohcl's tag
// conventions: "name,label", "name,attr" (required), "name,optional",
// "name,block". There is deliberately no ",remain": an attribute or block
// outside this reviewed subset is an error, which is the schema validation.

type jobFile struct {
	Job job `hcl:"job,block"`
}

type job struct {
	Name        string   `hcl:"name,label"`
	Type        string   `hcl:"type,attr"`
	Datacenters []string `hcl:"datacenters,optional"`
	Priority    int      `hcl:"priority,optional"`
	Update      *update  `hcl:"update,block"`
	Groups      []group  `hcl:"group,block"`
}

type update struct {
	MaxParallel     int    `hcl:"max_parallel,optional"`
	MinHealthyTime  string `hcl:"min_healthy_time,optional"`
	HealthyDeadline string `hcl:"healthy_deadline,optional"`
}

type group struct {
	Name    string       `hcl:"name,label"`
	Restart *restart     `hcl:"restart,block"`
	Volumes []hostVolume `hcl:"volume,block"`
	Tasks   []task       `hcl:"task,block"`
}

type restart struct {
	Attempts int    `hcl:"attempts,optional"`
	Interval string `hcl:"interval,optional"`
	Delay    string `hcl:"delay,optional"`
	Mode     string `hcl:"mode,optional"`
}

type hostVolume struct {
	Name     string `hcl:"name,label"`
	Type     string `hcl:"type,attr"`
	Source   string `hcl:"source,attr"`
	ReadOnly bool   `hcl:"read_only,optional"`
}

type task struct {
	Name         string         `hcl:"name,label"`
	Driver       string         `hcl:"driver,attr"`
	User         string         `hcl:"user,optional"`
	KillSignal   string         `hcl:"kill_signal,optional"`
	KillTimeout  string         `hcl:"kill_timeout,optional"`
	Config       dockerConfig   `hcl:"config,block"`
	VolumeMounts []volumeMount  `hcl:"volume_mount,block"`
	Templates    []taskTemplate `hcl:"template,block"`
	Resources    resources      `hcl:"resources,block"`
}

type dockerConfig struct {
	Image          string        `hcl:"image,attr"`
	Args           []string      `hcl:"args,optional"`
	Init           bool          `hcl:"init,optional"`
	ReadonlyRootfs bool          `hcl:"readonly_rootfs,optional"`
	CapDrop        []string      `hcl:"cap_drop,optional"`
	CapAdd         []string      `hcl:"cap_add,optional"`
	SecurityOpt    []string      `hcl:"security_opt,optional"`
	Mounts         []dockerMount `hcl:"mount,block"`
}

type dockerMount struct {
	Type         string `hcl:"type,attr"`
	Target       string `hcl:"target,attr"`
	ReadOnly     bool   `hcl:"readonly,optional"`
	TmpfsOptions *struct {
		Size int64 `hcl:"size,optional"`
	} `hcl:"tmpfs_options,block"`
}

type volumeMount struct {
	Volume      string `hcl:"volume,attr"`
	Destination string `hcl:"destination,attr"`
	ReadOnly    bool   `hcl:"read_only,optional"`
}

type taskTemplate struct {
	Destination  string `hcl:"destination,attr"`
	Data         string `hcl:"data,attr"`
	UID          *int   `hcl:"uid,optional"`
	GID          *int   `hcl:"gid,optional"`
	Perms        string `hcl:"perms,optional"`
	ChangeMode   string `hcl:"change_mode,optional"`
	ChangeSignal string `hcl:"change_signal,optional"`
}

type resources struct {
	CPU       int `hcl:"cpu,optional"`
	Memory    int `hcl:"memory,optional"`
	MemoryMax int `hcl:"memory_max,optional"`
}

// decodeStrict decodes body into the struct dst points to, by its hcl tags,
// like gohcl.DecodeBody without ",remain": hcl.Body.Content rejects every
// attribute and block the schema does not name. (gohcl itself is not used
// because it imports hclwrite, whose go-cmp dependency go.mod lacks.)
func decodeStrict(body hcl.Body, ctx *hcl.EvalContext, dst any) hcl.Diagnostics {
	v := reflect.ValueOf(dst)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		panic(fmt.Sprintf("decodeStrict: %T is not a pointer to a struct", dst))
	}
	return decodeStruct(body, ctx, v.Elem())
}

type fieldTag struct {
	name, kind string
	index      int
}

func structTags(t reflect.Type) []fieldTag {
	var out []fieldTag
	for i := range t.NumField() {
		tag, ok := t.Field(i).Tag.Lookup("hcl")
		if !ok {
			continue
		}
		name, kind, _ := strings.Cut(tag, ",")
		out = append(out, fieldTag{name: name, kind: kind, index: i})
	}
	return out
}

func blockElem(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
		t = t.Elem()
	}
	return t
}

func decodeStruct(body hcl.Body, ctx *hcl.EvalContext, sv reflect.Value) hcl.Diagnostics {
	tags := structTags(sv.Type())
	schema := &hcl.BodySchema{}
	for _, f := range tags {
		switch f.kind {
		case "attr", "optional":
			schema.Attributes = append(schema.Attributes, hcl.AttributeSchema{Name: f.name, Required: f.kind == "attr"})
		case "block":
			var labels []string
			for _, lf := range structTags(blockElem(sv.Type().Field(f.index).Type)) {
				if lf.kind == "label" {
					labels = append(labels, lf.name)
				}
			}
			schema.Blocks = append(schema.Blocks, hcl.BlockHeaderSchema{Type: f.name, LabelNames: labels})
		}
	}
	content, diags := body.Content(schema)
	for _, f := range tags {
		fv := sv.Field(f.index)
		switch f.kind {
		case "attr", "optional":
			attr, ok := content.Attributes[f.name]
			if !ok {
				continue
			}
			val, d := attr.Expr.Value(ctx)
			diags = append(diags, d...)
			if d.HasErrors() {
				continue
			}
			target := fv.Addr().Interface()
			ty, err := gocty.ImpliedType(reflect.New(blockElemPtr(fv.Type())).Interface())
			if err == nil {
				val, err = convert.Convert(val, ty)
			}
			if err == nil {
				err = gocty.FromCtyValue(val, target)
			}
			if err != nil {
				diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Unsuitable value", Detail: fmt.Sprintf("%s: %v", f.name, err), Subject: attr.Expr.Range().Ptr()})
			}
		case "block":
			var blocks []*hcl.Block
			for _, b := range content.Blocks {
				if b.Type == f.name {
					blocks = append(blocks, b)
				}
			}
			diags = append(diags, decodeBlocks(blocks, f.name, body, ctx, fv)...)
		}
	}
	return diags
}

// blockElemPtr strips one pointer level (optional attributes like *int).
func blockElemPtr(t reflect.Type) reflect.Type {
	if t.Kind() == reflect.Pointer {
		return t.Elem()
	}
	return t
}

// decodeBlocks fills a struct (exactly one block), *struct (at most one) or
// []struct (any number) field.
func decodeBlocks(blocks []*hcl.Block, name string, parent hcl.Body, ctx *hcl.EvalContext, fv reflect.Value) hcl.Diagnostics {
	var diags hcl.Diagnostics
	one := func(b *hcl.Block, sv reflect.Value) {
		li := 0
		for _, lf := range structTags(sv.Type()) {
			if lf.kind == "label" {
				sv.Field(lf.index).SetString(b.Labels[li])
				li++
			}
		}
		diags = append(diags, decodeStruct(b.Body, ctx, sv)...)
	}
	switch fv.Kind() {
	case reflect.Struct:
		if len(blocks) != 1 {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Wrong number of blocks", Detail: fmt.Sprintf("exactly one %q block is required, found %d", name, len(blocks)), Subject: parent.MissingItemRange().Ptr()})
			return diags
		}
		one(blocks[0], fv)
	case reflect.Pointer:
		if len(blocks) > 1 {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Duplicate block", Detail: fmt.Sprintf("at most one %q block is allowed", name), Subject: &blocks[1].DefRange})
			return diags
		}
		if len(blocks) == 1 {
			fv.Set(reflect.New(fv.Type().Elem()))
			one(blocks[0], fv.Elem())
		}
	case reflect.Slice:
		fv.Set(reflect.MakeSlice(fv.Type(), len(blocks), len(blocks)))
		for i, b := range blocks {
			one(b, fv.Index(i))
		}
	default:
		panic(fmt.Sprintf("decodeBlocks: field for %q has unsupported kind %s", name, fv.Kind()))
	}
	return diags
}

func parseJob(name string, src []byte) (*jobFile, error) {
	p := hclparse.NewParser()
	f, diags := p.ParseHCL(src, name)
	if diags.HasErrors() {
		return nil, errors.New(diags.Error())
	}
	var jf jobFile
	if diags := decodeStrict(f.Body, nil, &jf); diags.HasErrors() {
		return nil, errors.New(diags.Error())
	}
	return &jf, nil
}

const (
	jobPath     = "boincd.nomad.hcl"
	dataDir     = "/var/lib/boincd" // the image's ENTRYPOINT --dir
	stopTimeout = 60 * time.Second  // daemon.Options.StopTimeout default
	varPath     = "nomad/jobs/boincd"
	testKey     = "0123456789abcdef0123456789abcdef"
)

func loadJob(t *testing.T) (*job, *task) {
	t.Helper()
	src, err := os.ReadFile(jobPath)
	if err != nil {
		t.Fatal(err)
	}
	jf, err := parseJob(jobPath, src)
	if err != nil {
		t.Fatal(err)
	}
	j := &jf.Job
	if len(j.Groups) != 1 || len(j.Groups[0].Tasks) != 1 {
		t.Fatalf("job has %d groups; want one group with one task", len(j.Groups))
	}
	return j, &j.Groups[0].Tasks[0]
}

func TestDecodeIsStrict(t *testing.T) {
	const valid = `job "x" {
  type = "system"
  group "g" {
    task "t" {
      driver = "docker"
      config {
        image = "i"
      }
      resources {}
    }
  }
}
`
	tests := []struct {
		name, src, wantErr string
	}{
		{"valid minimal job", valid, ""},
		{"number converts to string", strings.Replace(valid, `driver = "docker"`, "driver = \"docker\"\n      user = 10001", 1), ""},
		{"misspelt attribute", strings.Replace(valid, `driver = "docker"`, "driver = \"docker\"\n      kill_timout = \"90s\"", 1), `An argument named "kill_timout" is not expected here`},
		{"unknown block", strings.Replace(valid, `resources {}`, "resources {}\n      artifact {}", 1), `Blocks of type "artifact" are not expected here`},
		{"unknown docker option", strings.Replace(valid, `image = "i"`, "image = \"i\"\n        privileged = true", 1), `"privileged" is not expected here`},
		{"missing required attribute", strings.Replace(valid, `type = "system"`, "", 1), `The argument "type" is required`},
		{"missing required block", strings.Replace(valid, `resources {}`, "", 1), `exactly one "resources" block is required`},
		{"duplicate optional block", strings.Replace(valid, `type = "system"`, "type = \"system\"\n  update {}\n  update {}", 1), `at most one "update" block`},
		{"wrong type", strings.Replace(valid, `type = "system"`, "type = \"system\"\n  priority = \"low\"", 1), "a number is required"},
		{"missing label", strings.Replace(valid, `task "t"`, "task", 1), "Missing name for task"},
		{"syntax error", valid + "}", "Argument or block definition required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseJob("t.hcl", []byte(tt.src))
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want it to contain %q", err, tt.wantErr)
			}
		})
	}
}

func TestJob(t *testing.T) {
	j, tk := loadJob(t)
	g := j.Groups[0]

	checks := []struct {
		name  string
		check func() error
	}{
		{"system job: one allocation per node", func() error {
			if j.Type != "system" {
				return fmt.Errorf("type = %q, want system", j.Type)
			}
			return nil
		}},
		{"low priority", func() error {
			if j.Priority == 0 || j.Priority >= 50 {
				return fmt.Errorf("priority %d: want below Nomad's default 50 (unset means 50)", j.Priority)
			}
			return nil
		}},
		{"durations parse", func() error {
			ds := map[string]string{"kill_timeout": tk.KillTimeout}
			if j.Update != nil {
				ds["update.min_healthy_time"] = j.Update.MinHealthyTime
				ds["update.healthy_deadline"] = j.Update.HealthyDeadline
			}
			if g.Restart != nil {
				ds["restart.interval"] = g.Restart.Interval
				ds["restart.delay"] = g.Restart.Delay
			}
			for k, v := range ds {
				if v == "" {
					continue
				}
				if _, err := time.ParseDuration(v); err != nil {
					return fmt.Errorf("%s = %q: %w", k, v, err)
				}
			}
			return nil
		}},
		{"rolling update one node at a time", func() error {
			if j.Update == nil || j.Update.MaxParallel != 1 {
				return fmt.Errorf("update.max_parallel must be 1: every restart makes the node's tasks stop at a checkpoint")
			}
			return nil
		}},
		{"graceful stop outlasts boincd's task stop timeout", func() error {
			if tk.KillSignal != "SIGTERM" {
				return fmt.Errorf("kill_signal = %q, want SIGTERM", tk.KillSignal)
			}
			d, err := time.ParseDuration(tk.KillTimeout)
			if err != nil {
				return fmt.Errorf("kill_timeout %q: %w", tk.KillTimeout, err)
			}
			if d < stopTimeout+20*time.Second {
				return fmt.Errorf("kill_timeout %s: want >= %s (boincd waits %s for tasks to checkpoint)", d, stopTimeout+20*time.Second, stopTimeout)
			}
			return nil
		}},
		{"runs as the image's non-root user", func() error {
			u, _, _ := strings.Cut(tk.User, ":")
			n, err := strconv.Atoi(u)
			if err != nil || n == 0 {
				return fmt.Errorf("user = %q: want a numeric non-root uid", tk.User)
			}
			if n != 10001 {
				return fmt.Errorf("user = %q: want 10001, the image's user", tk.User)
			}
			return nil
		}},
		{"docker task locked down", func() error {
			c := tk.Config
			switch {
			case tk.Driver != "docker":
				return fmt.Errorf("driver = %q, want docker", tk.Driver)
			case c.Image == "":
				return fmt.Errorf("no image")
			case !c.ReadonlyRootfs:
				return fmt.Errorf("readonly_rootfs must be true")
			case !slices.Equal(c.CapDrop, []string{"ALL"}) || len(c.CapAdd) != 0:
				return fmt.Errorf("cap_drop must be [ALL] and cap_add empty")
			case !slices.Contains(c.SecurityOpt, "no-new-privileges"):
				return fmt.Errorf("security_opt must contain no-new-privileges")
			}
			for _, m := range c.Mounts {
				if m.Target == "/tmp" && m.Type == "tmpfs" && !m.ReadOnly {
					return nil
				}
			}
			return fmt.Errorf("no writable tmpfs at /tmp: apps that use it would fail on the read-only root")
		}},
		{"data directory is a writable host volume at --dir", func() error {
			for _, vm := range tk.VolumeMounts {
				if vm.Destination != dataDir {
					continue
				}
				if vm.ReadOnly {
					return fmt.Errorf("%s is mounted read-only", dataDir)
				}
				for _, v := range g.Volumes {
					if v.Name == vm.Volume {
						if v.Type != "host" || v.Source == "" || v.ReadOnly {
							return fmt.Errorf("volume %s: want a writable host volume, so tasks survive the allocation", v.Name)
						}
						return nil
					}
				}
				return fmt.Errorf("volume_mount names %q, which the group does not declare", vm.Volume)
			}
			return fmt.Errorf("nothing mounted at %s", dataDir)
		}},
		{"every declared volume is mounted", func() error {
			for _, v := range g.Volumes {
				if !slices.ContainsFunc(tk.VolumeMounts, func(vm volumeMount) bool { return vm.Volume == v.Name }) {
					return fmt.Errorf("volume %s is never mounted", v.Name)
				}
			}
			return nil
		}},
		{"templates stay in the task dir, secrets in secrets/", func() error {
			for _, tp := range tk.Templates {
				if _, err := taskFile(tp.Destination); err != nil {
					return err
				}
				if strings.Contains(tp.Data, "nomadVar") && !strings.HasPrefix(path.Clean(tp.Destination), "secrets/") {
					return fmt.Errorf("template %s renders a Nomad Variable outside secrets/", tp.Destination)
				}
				if tp.UID == nil || *tp.UID != 10001 {
					return fmt.Errorf("template %s: uid must be 10001 so boincd can read it", tp.Destination)
				}
				if tp.Perms != "" {
					p, err := strconv.ParseUint(tp.Perms, 8, 32)
					if err != nil || p&0o077 != 0 {
						return fmt.Errorf("template %s: perms %q: want owner-only", tp.Destination, tp.Perms)
					}
				}
				if tp.ChangeMode == "signal" && tp.ChangeSignal != "SIGHUP" {
					return fmt.Errorf("template %s: change_signal %q: boincd reloads on SIGHUP", tp.Destination, tp.ChangeSignal)
				}
			}
			return nil
		}},
		{"resources: small CPU share, memory set", func() error {
			r := tk.Resources
			if r.CPU <= 0 || r.CPU > 500 {
				return fmt.Errorf("cpu = %d MHz: want a small share (BOINC uses idle CPU; cpu is a weight, not a cap)", r.CPU)
			}
			if r.Memory < 1024 {
				return fmt.Errorf("memory = %d MB: a hard limit this low OOM-kills science apps", r.Memory)
			}
			return nil
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

// taskFile maps a template destination (relative to the task directory) to
// a clean relative path, refusing ones that escape it.
func taskFile(dest string) (string, error) {
	p := path.Clean(dest)
	if path.IsAbs(p) || p == ".." || strings.HasPrefix(p, "../") {
		return "", fmt.Errorf("template destination %q is outside the task directory", dest)
	}
	if !strings.HasPrefix(p, "local/") && !strings.HasPrefix(p, "secrets/") {
		return "", fmt.Errorf("template destination %q: want local/ or secrets/", dest)
	}
	return p, nil
}

// containerToTask maps a path as the docker task sees it (/local/...,
// /secrets/...) to the task-directory path Nomad renders templates into.
func containerToTask(p string) (string, error) {
	p = path.Clean(p)
	for _, dir := range []string{"/local/", "/secrets/"} {
		if strings.HasPrefix(p, dir) {
			return strings.TrimPrefix(p, "/"), nil
		}
	}
	return "", fmt.Errorf("%s is not in the task's /local or /secrets directory", p)
}

// renderTemplates renders every template as Nomad's consul-template would,
// with nomadVar stubbed to vars, into taskDir.
func renderTemplates(tk *task, taskDir string, vars map[string]map[string]string) error {
	funcs := template.FuncMap{
		"nomadVar": func(p string) (map[string]string, error) {
			v, ok := vars[p]
			if !ok {
				return nil, fmt.Errorf("nomadVar %q: no such variable", p)
			}
			return v, nil
		},
		"env": func(string) string { return "" },
	}
	for _, tp := range tk.Templates {
		rel, err := taskFile(tp.Destination)
		if err != nil {
			return err
		}
		tmpl, err := template.New(tp.Destination).Option("missingkey=error").Funcs(funcs).Parse(tp.Data)
		if err != nil {
			return fmt.Errorf("template %s: %w", tp.Destination, err)
		}
		var b strings.Builder
		if err := tmpl.Execute(&b, nil); err != nil {
			return fmt.Errorf("template %s: %w", tp.Destination, err)
		}
		file := filepath.Join(taskDir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
			return err
		}
		if err := os.WriteFile(file, []byte(b.String()), 0o400); err != nil {
			return err
		}
	}
	return nil
}

func configArg(args []string) (string, error) {
	for i, a := range args {
		if a == "--config" && i+1 < len(args) {
			return args[i+1], nil
		}
		if v, ok := strings.CutPrefix(a, "--config="); ok {
			return v, nil
		}
	}
	return "", fmt.Errorf("args %q have no --config", args)
}

// TestRenderedConfig renders the templates with a stub Nomad Variable and
// loads the result with the daemon's own config loader, as boincd would at
// start in the task.
func TestRenderedConfig(t *testing.T) {
	_, tk := loadJob(t)
	cfgArg, err := configArg(tk.Config.Args)
	if err != nil {
		t.Fatal(err)
	}
	rel, err := containerToTask(cfgArg)
	if err != nil {
		t.Fatal(err)
	}
	taskDir := t.TempDir()
	if err := renderTemplates(tk, taskDir, map[string]map[string]string{varPath: {"account_key": testKey}}); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(filepath.Join(taskDir, filepath.FromSlash(rel)), false, func(string) string { return "" })
	if err != nil {
		t.Fatalf("boincd would refuse this config: %v", err)
	}
	if len(cfg.Projects) != 1 {
		t.Fatalf("config has %d projects, want 1", len(cfg.Projects))
	}
	tests := []struct {
		what      string
		got, want any
	}{
		{"project URL", cfg.Projects[0].URL, "https://einsteinathome.org/"},
		{"account key from the Nomad Variable", cfg.Projects[0].Authenticator, testKey},
		{"no account manager without am_url", cfg.AccountManager.Enabled(), false},
		{"log format", cfg.Log.Format, "json"},
		{"GUI RPC stays on loopback", cfg.GUIRPC.Address, "127.0.0.1:31416"},
		{"data_dir unset (the image passes --dir, so it would be ignored)", cfg.DataDir, ""},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s = %v, want %v", tt.what, tt.got, tt.want)
		}
	}
}

// TestRenderedAccountManager: with am_url, am_user and am_password in the
// Nomad Variable, every node joins the account manager, the password
// hashed as the C++ client keeps it.
func TestRenderedAccountManager(t *testing.T) {
	_, tk := loadJob(t)
	cfgArg, err := configArg(tk.Config.Args)
	if err != nil {
		t.Fatal(err)
	}
	rel, err := containerToTask(cfgArg)
	if err != nil {
		t.Fatal(err)
	}
	taskDir := t.TempDir()
	vars := map[string]map[string]string{varPath: {"account_key": testKey, "am_url": "https://bam.example/", "am_user": "Alice", "am_password": "pw"}}
	if err := renderTemplates(tk, taskDir, vars); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(filepath.Join(taskDir, filepath.FromSlash(rel)), false, func(string) string { return "" })
	if err != nil {
		t.Fatalf("boincd would refuse this config: %v", err)
	}
	am := cfg.AccountManager
	// MD5("pw" + "alice")
	if am.URL != "https://bam.example/" || am.User != "Alice" || am.PasswordHash != "aa7bb6fc2700e717ae61ec5c1567469c" {
		t.Errorf("account manager %+v", am)
	}
}

// TestRenderWithoutVariable: before the operator stores the key, the key
// template cannot render (Nomad holds the task in "template rendering" until
// the variable exists); the stub must fail the same way, naming the path.
func TestRenderWithoutVariable(t *testing.T) {
	_, tk := loadJob(t)
	err := renderTemplates(tk, t.TempDir(), map[string]map[string]string{})
	if err == nil || !strings.Contains(err.Error(), `nomadVar "`+varPath+`": no such variable`) {
		t.Fatalf("err = %v, want the missing variable named", err)
	}
}
