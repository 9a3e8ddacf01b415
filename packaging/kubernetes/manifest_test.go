package kubernetes

import (
	"bytes"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/boincd/boincd/config"
)

// The types below mirror the subset of the Kubernetes API (core/v1,
// apps/v1, scheduling/v1) that boincd.yaml uses, with the API's JSON field
// names. Decoding is strict, so a field that is misspelt, misplaced, or
// simply not part of this reviewed subset (hostNetwork, privileged,
// hostPID...) fails the test: adding one is a deliberate change here too.

type objectMeta struct {
	Name        string            `json:"name"`
	Namespace   string            `json:"namespace"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
}

type typeMeta struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
}

type namespace struct {
	typeMeta
	Metadata objectMeta `json:"metadata"`
}

type priorityClass struct {
	typeMeta
	Metadata         objectMeta `json:"metadata"`
	Value            int32      `json:"value"`
	GlobalDefault    bool       `json:"globalDefault"`
	PreemptionPolicy string     `json:"preemptionPolicy"`
	Description      string     `json:"description"`
}

type configMap struct {
	typeMeta
	Metadata objectMeta        `json:"metadata"`
	Data     map[string]string `json:"data"`
}

type secret struct {
	typeMeta
	Metadata   objectMeta        `json:"metadata"`
	Type       string            `json:"type"`
	StringData map[string]string `json:"stringData"`
	Data       map[string][]byte `json:"data"` // base64 in JSON, as in the API
}

type daemonSet struct {
	typeMeta
	Metadata objectMeta    `json:"metadata"`
	Spec     daemonSetSpec `json:"spec"`
}

type daemonSetSpec struct {
	Selector struct {
		MatchLabels map[string]string `json:"matchLabels"`
	} `json:"selector"`
	UpdateStrategy struct {
		Type          string `json:"type"`
		RollingUpdate *struct {
			MaxUnavailable intOrString `json:"maxUnavailable"`
			MaxSurge       intOrString `json:"maxSurge"`
		} `json:"rollingUpdate"`
	} `json:"updateStrategy"`
	Template struct {
		Metadata objectMeta `json:"metadata"`
		Spec     podSpec    `json:"spec"`
	} `json:"template"`
}

type podSpec struct {
	TerminationGracePeriodSeconds *int64            `json:"terminationGracePeriodSeconds"`
	AutomountServiceAccountToken  *bool             `json:"automountServiceAccountToken"`
	EnableServiceLinks            *bool             `json:"enableServiceLinks"`
	PriorityClassName             string            `json:"priorityClassName"`
	NodeSelector                  map[string]string `json:"nodeSelector"`
	Tolerations                   []struct {
		Key      string `json:"key"`
		Operator string `json:"operator"`
		Value    string `json:"value"`
		Effect   string `json:"effect"`
	} `json:"tolerations"`
	SecurityContext *struct {
		RunAsNonRoot   *bool  `json:"runAsNonRoot"`
		RunAsUser      *int64 `json:"runAsUser"`
		RunAsGroup     *int64 `json:"runAsGroup"`
		FSGroup        *int64 `json:"fsGroup"`
		SeccompProfile *struct {
			Type string `json:"type"`
		} `json:"seccompProfile"`
	} `json:"securityContext"`
	InitContainers []container `json:"initContainers"`
	Containers     []container `json:"containers"`
	Volumes        []volume    `json:"volumes"`
}

type container struct {
	Name            string   `json:"name"`
	Image           string   `json:"image"`
	ImagePullPolicy string   `json:"imagePullPolicy"`
	Command         []string `json:"command"`
	Args            []string `json:"args"`
	Env             []struct {
		Name  string `json:"name"`
		Value string `json:"value"`
	} `json:"env"`
	SecurityContext *securityContext `json:"securityContext"`
	Resources       struct {
		Requests map[string]quantity `json:"requests"`
		Limits   map[string]quantity `json:"limits"`
	} `json:"resources"`
	VolumeMounts []struct {
		Name      string `json:"name"`
		MountPath string `json:"mountPath"`
		ReadOnly  bool   `json:"readOnly"`
	} `json:"volumeMounts"`
}

type securityContext struct {
	RunAsNonRoot             *bool  `json:"runAsNonRoot"`
	RunAsUser                *int64 `json:"runAsUser"`
	RunAsGroup               *int64 `json:"runAsGroup"`
	AllowPrivilegeEscalation *bool  `json:"allowPrivilegeEscalation"`
	ReadOnlyRootFilesystem   *bool  `json:"readOnlyRootFilesystem"`
	Capabilities             *struct {
		Add  []string `json:"add"`
		Drop []string `json:"drop"`
	} `json:"capabilities"`
}

type keyToPath struct {
	Key  string `json:"key"`
	Path string `json:"path"`
	Mode *int32 `json:"mode"`
}

type volume struct {
	Name     string `json:"name"`
	HostPath *struct {
		Path string `json:"path"`
		Type string `json:"type"`
	} `json:"hostPath"`
	EmptyDir *struct {
		Medium    string    `json:"medium"`
		SizeLimit *quantity `json:"sizeLimit"`
	} `json:"emptyDir"`
	ConfigMap *struct {
		Name        string      `json:"name"`
		Items       []keyToPath `json:"items"`
		DefaultMode *int32      `json:"defaultMode"`
	} `json:"configMap"`
	Secret *struct {
		SecretName  string      `json:"secretName"`
		Items       []keyToPath `json:"items"`
		DefaultMode *int32      `json:"defaultMode"`
	} `json:"secret"`
	Projected *struct {
		DefaultMode *int32 `json:"defaultMode"`
		Sources     []struct {
			ConfigMap *struct {
				Name  string      `json:"name"`
				Items []keyToPath `json:"items"`
			} `json:"configMap"`
			Secret *struct {
				Name     string      `json:"name"`
				Optional bool        `json:"optional"`
				Items    []keyToPath `json:"items"`
			} `json:"secret"`
		} `json:"sources"`
	} `json:"projected"`
}

// quantityRE is the API's resource.Quantity syntax.
var quantityRE = regexp.MustCompile(`^[+-]?(\d+(\.\d*)?|\.\d+)(([KMGTPE]i)|[numkMGTPE]|[eE][+-]?\d+)?$`)

// quantity accepts what resource.Quantity accepts in JSON: a string or a
// number in the quantity syntax.
type quantity string

func (q *quantity) UnmarshalJSON(b []byte) error {
	s := string(b)
	if len(b) > 0 && b[0] == '"' {
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
	}
	if !quantityRE.MatchString(s) {
		return fmt.Errorf("quantity %s: not a Kubernetes quantity", b)
	}
	*q = quantity(s)
	return nil
}

// intOrString mirrors intstr.IntOrString: a number or a string like "10%".
type intOrString string

func (v *intOrString) UnmarshalJSON(b []byte) error {
	var n int32
	if err := json.Unmarshal(b, &n); err == nil {
		*v = intOrString(fmt.Sprint(n))
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("int-or-string %s: %w", b, err)
	}
	*v = intOrString(s)
	return nil
}

// manifest is boincd.yaml decoded.
type manifest struct {
	Namespaces      []namespace
	PriorityClasses []priorityClass
	ConfigMaps      []configMap
	Secrets         []secret
	DaemonSets      []daemonSet
}

var docSep = regexp.MustCompile(`(?m)^---[ \t]*(#.*)?$`)

// splitDocuments splits a multi-document YAML stream, dropping documents
// that hold only comments and blank lines. Each document keeps the line it
// starts on, for error messages.
func splitDocuments(data []byte) (docs [][]byte, lines []int) {
	locs := docSep.FindAllIndex(data, -1)
	start := 0
	emit := func(end int) {
		doc := data[start:end]
		for _, l := range strings.Split(string(doc), "\n") {
			if t := strings.TrimSpace(l); t != "" && !strings.HasPrefix(t, "#") {
				docs = append(docs, doc)
				lines = append(lines, 1+bytes.Count(data[:start], []byte("\n")))
				return
			}
		}
	}
	for _, loc := range locs {
		emit(loc[0])
		start = loc[1]
	}
	emit(len(data))
	return docs, lines
}

// decodeManifest decodes every document strictly into the mirror types.
func decodeManifest(name string, data []byte) (*manifest, error) {
	docs, lines := splitDocuments(data)
	m := &manifest{}
	for i, doc := range docs {
		at := fmt.Sprintf("%s: document %d (line %d)", name, i+1, lines[i])
		var tm typeMeta
		if err := yaml.Unmarshal(doc, &tm); err != nil {
			return nil, fmt.Errorf("%s: %w", at, err)
		}
		var err error
		switch tm.APIVersion + " " + tm.Kind {
		case "v1 Namespace":
			var o namespace
			err = yaml.UnmarshalStrict(doc, &o)
			m.Namespaces = append(m.Namespaces, o)
		case "scheduling.k8s.io/v1 PriorityClass":
			var o priorityClass
			err = yaml.UnmarshalStrict(doc, &o)
			m.PriorityClasses = append(m.PriorityClasses, o)
		case "v1 ConfigMap":
			var o configMap
			err = yaml.UnmarshalStrict(doc, &o)
			m.ConfigMaps = append(m.ConfigMaps, o)
		case "v1 Secret":
			var o secret
			err = yaml.UnmarshalStrict(doc, &o)
			m.Secrets = append(m.Secrets, o)
		case "apps/v1 DaemonSet":
			var o daemonSet
			err = yaml.UnmarshalStrict(doc, &o)
			m.DaemonSets = append(m.DaemonSets, o)
		default:
			return nil, fmt.Errorf("%s: %s %q: not a kind this manifest may contain", at, tm.APIVersion, tm.Kind)
		}
		if err != nil {
			return nil, fmt.Errorf("%s (%s): %w", at, tm.Kind, err)
		}
	}
	return m, nil
}

func (m *manifest) configMap(name string) (*configMap, bool) {
	for i := range m.ConfigMaps {
		if m.ConfigMaps[i].Metadata.Name == name {
			return &m.ConfigMaps[i], true
		}
	}
	return nil, false
}

// secretData merges data and stringData as the API server does.
func (m *manifest) secretData(name string) (map[string]string, bool) {
	for _, s := range m.Secrets {
		if s.Metadata.Name != name {
			continue
		}
		out := map[string]string{}
		for k, v := range s.Data {
			out[k] = string(v)
		}
		for k, v := range s.StringData {
			out[k] = v
		}
		return out, true
	}
	return nil, false
}

// materialize writes the files a configMap, secret or projected volume
// shows to the container under dir, the way the kubelet lays them out.
func (m *manifest) materialize(v volume, dir string) error {
	type source struct {
		kind, name string
		optional   bool
		items      []keyToPath
	}
	var srcs []source
	switch {
	case v.ConfigMap != nil:
		srcs = append(srcs, source{"configMap", v.ConfigMap.Name, false, v.ConfigMap.Items})
	case v.Secret != nil:
		srcs = append(srcs, source{"secret", v.Secret.SecretName, false, v.Secret.Items})
	case v.Projected != nil:
		for _, s := range v.Projected.Sources {
			switch {
			case s.ConfigMap != nil:
				srcs = append(srcs, source{"configMap", s.ConfigMap.Name, false, s.ConfigMap.Items})
			case s.Secret != nil:
				srcs = append(srcs, source{"secret", s.Secret.Name, s.Secret.Optional, s.Secret.Items})
			default:
				return fmt.Errorf("volume %s: projected source with neither configMap nor secret", v.Name)
			}
		}
	default:
		return fmt.Errorf("volume %s: not a configMap, secret or projected volume", v.Name)
	}
	for _, s := range srcs {
		var data map[string]string
		if s.kind == "configMap" {
			cm, ok := m.configMap(s.name)
			if !ok {
				return fmt.Errorf("volume %s: configMap %q is not in the manifest", v.Name, s.name)
			}
			data = cm.Data
		} else {
			d, ok := m.secretData(s.name)
			if !ok && s.optional {
				continue // the kubelet leaves an optional Secret's files out
			}
			if !ok {
				return fmt.Errorf("volume %s: secret %q is not in the manifest", v.Name, s.name)
			}
			data = d
		}
		items := s.items
		if len(items) == 0 {
			for k := range data {
				items = append(items, keyToPath{Key: k, Path: k})
			}
		}
		for _, it := range items {
			val, ok := data[it.Key]
			if !ok {
				return fmt.Errorf("volume %s: %s %s has no key %q", v.Name, s.kind, s.name, it.Key)
			}
			p := path.Clean(it.Path)
			if path.IsAbs(p) || p == ".." || strings.HasPrefix(p, "../") {
				return fmt.Errorf("volume %s: item path %q leaves the volume", v.Name, it.Path)
			}
			file := filepath.Join(dir, filepath.FromSlash(p))
			if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
				return err
			}
			if err := os.WriteFile(file, []byte(val), 0o440); err != nil {
				return err
			}
		}
	}
	return nil
}

const (
	dataDir      = "/var/lib/boincd" // the image's ENTRYPOINT --dir
	uid          = 10001
	stopTimeout  = 60 // daemon.Options.StopTimeout default, seconds
	manifestPath = "boincd.yaml"
)

func loadManifest(t *testing.T) *manifest {
	t.Helper()
	data, err := os.ReadFile(manifestPath)
	if err != nil {
		t.Fatal(err)
	}
	m, err := decodeManifest(manifestPath, data)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.DaemonSets) != 1 {
		t.Fatalf("%d DaemonSets, want 1", len(m.DaemonSets))
	}
	if len(m.DaemonSets[0].Spec.Template.Spec.Containers) != 1 {
		t.Fatalf("DaemonSet has %d containers, want 1", len(m.DaemonSets[0].Spec.Template.Spec.Containers))
	}
	return m
}

func TestDecodeIsStrict(t *testing.T) {
	tests := []struct {
		name, doc, wantErr string
	}{
		{"misspelt field", "apiVersion: v1\nkind: Namespace\nmetadata:\n  nme: x\n", `unknown field "nme"`},
		{"field outside the reviewed subset", "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: x}\nspec:\n  template:\n    spec:\n      hostNetwork: true\n", `unknown field "hostNetwork"`},
		{"privileged container", "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: x}\nspec:\n  template:\n    spec:\n      containers:\n      - name: a\n        securityContext: {privileged: true}\n", `unknown field "privileged"`},
		{"wrong type", "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: x}\nvalue: low\n", "cannot unmarshal string"},
		{"bad quantity", "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: x}\nspec:\n  template:\n    spec:\n      containers:\n      - name: a\n        resources: {requests: {cpu: lots}}\n", "not a Kubernetes quantity"},
		{"duplicate key", "apiVersion: v1\nkind: Namespace\nmetadata: {name: x}\nmetadata: {name: y}\n", `key "metadata" already set`},
		{"unknown kind", "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\n", `v1 "Pod": not a kind`},
		{"kind at the wrong version", "apiVersion: extensions/v1beta1\nkind: DaemonSet\nmetadata: {name: x}\n", "not a kind"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := decodeManifest("t.yaml", []byte("---\n"+tt.doc))
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want it to contain %q", err, tt.wantErr)
			}
		})
	}
}

func TestSplitDocuments(t *testing.T) {
	in := "# header\n---\na: 1\n--- # two\n# only a comment\n---\nb: 2\n---\n"
	docs, lines := splitDocuments([]byte(in))
	if len(docs) != 2 || strings.TrimSpace(string(docs[0])) != "a: 1" || strings.TrimSpace(string(docs[1])) != "b: 2" {
		t.Fatalf("docs = %q", docs)
	}
	if !slices.Equal(lines, []int{2, 6}) {
		t.Errorf("lines = %v, want [2 6]", lines)
	}
}

func isTrue(b *bool) bool  { return b != nil && *b }
func isFalse(b *bool) bool { return b != nil && !*b }

func TestManifest(t *testing.T) {
	m := loadManifest(t)
	ds := m.DaemonSets[0]
	pod := ds.Spec.Template.Spec
	c := pod.Containers[0]

	checks := []struct {
		name  string
		check func() error
	}{
		{"one of each object, all in the namespace", func() error {
			if len(m.Namespaces) != 1 || len(m.ConfigMaps) != 1 || len(m.Secrets) != 1 {
				return fmt.Errorf("%d Namespaces, %d ConfigMaps, %d Secrets: want one each", len(m.Namespaces), len(m.ConfigMaps), len(m.Secrets))
			}
			ns := m.Namespaces[0].Metadata.Name
			for kind, meta := range map[string]objectMeta{"ConfigMap": m.ConfigMaps[0].Metadata, "Secret": m.Secrets[0].Metadata, "DaemonSet": ds.Metadata} {
				if meta.Namespace != ns {
					return fmt.Errorf("%s %s is in namespace %q, want %q", kind, meta.Name, meta.Namespace, ns)
				}
			}
			return nil
		}},
		{"selector matches the pod labels", func() error {
			sel := ds.Spec.Selector.MatchLabels
			if len(sel) == 0 {
				return fmt.Errorf("empty selector")
			}
			for k, v := range sel {
				if ds.Spec.Template.Metadata.Labels[k] != v {
					return fmt.Errorf("selector %s=%s does not match the template labels %v", k, v, ds.Spec.Template.Metadata.Labels)
				}
			}
			return nil
		}},
		{"pod runs as non-root uid 10001", func() error {
			sc := pod.SecurityContext
			if sc == nil || !isTrue(sc.RunAsNonRoot) || sc.RunAsUser == nil || *sc.RunAsUser != uid {
				return fmt.Errorf("pod securityContext must set runAsNonRoot: true and runAsUser: %d", uid)
			}
			if sc.SeccompProfile == nil || sc.SeccompProfile.Type != "RuntimeDefault" {
				return fmt.Errorf("pod seccompProfile must be RuntimeDefault")
			}
			return nil
		}},
		{"boincd container is locked down", func() error {
			sc := c.SecurityContext
			switch {
			case sc == nil:
				return fmt.Errorf("container %s has no securityContext", c.Name)
			case !isFalse(sc.AllowPrivilegeEscalation):
				return fmt.Errorf("allowPrivilegeEscalation must be false")
			case !isTrue(sc.ReadOnlyRootFilesystem):
				return fmt.Errorf("readOnlyRootFilesystem must be true")
			case sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []string{"ALL"}) || len(sc.Capabilities.Add) != 0:
				return fmt.Errorf("capabilities must drop ALL and add none")
			case sc.RunAsNonRoot != nil && !*sc.RunAsNonRoot, sc.RunAsUser != nil && *sc.RunAsUser != uid:
				return fmt.Errorf("container overrides the pod's non-root user")
			}
			return nil
		}},
		{"init containers only chown", func() error {
			for _, ic := range pod.InitContainers {
				sc := ic.SecurityContext
				if sc == nil || !isFalse(sc.AllowPrivilegeEscalation) || !isTrue(sc.ReadOnlyRootFilesystem) || sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []string{"ALL"}) {
					return fmt.Errorf("init container %s: must drop ALL capabilities, forbid escalation and have a read-only root", ic.Name)
				}
				for _, cp := range sc.Capabilities.Add {
					if cp != "CHOWN" {
						return fmt.Errorf("init container %s adds capability %s; only CHOWN is needed", ic.Name, cp)
					}
				}
				if ic.Image != c.Image {
					return fmt.Errorf("init container %s uses image %s, not the boincd image %s", ic.Name, ic.Image, c.Image)
				}
				if len(ic.Command) == 0 || !slices.Contains(ic.Command, fmt.Sprintf("%d:%d", uid, uid)) {
					return fmt.Errorf("init container %s: command %q does not chown to %d:%d", ic.Name, ic.Command, uid, uid)
				}
			}
			return nil
		}},
		{"graceful stop outlasts boincd's task stop timeout", func() error {
			g := pod.TerminationGracePeriodSeconds
			if g == nil {
				return fmt.Errorf("terminationGracePeriodSeconds unset: the default 30 s cuts boincd's %d s task stop short", stopTimeout)
			}
			if *g < stopTimeout+20 {
				return fmt.Errorf("terminationGracePeriodSeconds %d: want >= %d (boincd waits %d s for tasks to checkpoint)", *g, stopTimeout+20, stopTimeout)
			}
			return nil
		}},
		{"no CPU limit, small requests", func() error {
			if _, ok := c.Resources.Limits["cpu"]; ok {
				return fmt.Errorf("a CPU limit throttles BOINC on an idle node; its low request already makes it yield")
			}
			if _, ok := c.Resources.Limits["memory"]; ok {
				return fmt.Errorf("a memory limit boincd cannot see would OOM-kill science apps")
			}
			if c.Resources.Requests["cpu"] == "" || c.Resources.Requests["memory"] == "" {
				return fmt.Errorf("cpu and memory requests must be set (they set the pod's CPU weight and eviction order)")
			}
			return nil
		}},
		{"no API access", func() error {
			if !isFalse(pod.AutomountServiceAccountToken) {
				return fmt.Errorf("automountServiceAccountToken must be false")
			}
			return nil
		}},
		{"every mount has a volume and every volume is mounted", func() error {
			vols := map[string]bool{}
			for _, v := range pod.Volumes {
				if vols[v.Name] {
					return fmt.Errorf("volume %s declared twice", v.Name)
				}
				vols[v.Name] = true
			}
			used := map[string]bool{}
			for _, ct := range append(slices.Clone(pod.InitContainers), pod.Containers...) {
				paths := map[string]bool{}
				for _, vm := range ct.VolumeMounts {
					if !vols[vm.Name] {
						return fmt.Errorf("container %s mounts %s, which is not a volume", ct.Name, vm.Name)
					}
					if paths[vm.MountPath] {
						return fmt.Errorf("container %s mounts two volumes at %s", ct.Name, vm.MountPath)
					}
					paths[vm.MountPath] = true
					used[vm.Name] = true
				}
			}
			for v := range vols {
				if !used[v] {
					return fmt.Errorf("volume %s is never mounted", v)
				}
			}
			return nil
		}},
		{"data directory is a writable hostPath at --dir", func() error {
			for _, vm := range c.VolumeMounts {
				if vm.MountPath != dataDir {
					continue
				}
				if vm.ReadOnly {
					return fmt.Errorf("%s is mounted read-only", dataDir)
				}
				for _, v := range pod.Volumes {
					if v.Name == vm.Name {
						if v.HostPath == nil || v.HostPath.Path == "" || v.HostPath.Type != "DirectoryOrCreate" {
							return fmt.Errorf("volume %s: want a hostPath DirectoryOrCreate, so tasks survive pod restarts", v.Name)
						}
						return nil
					}
				}
			}
			return fmt.Errorf("nothing mounted at %s", dataDir)
		}},
		{"writable /tmp with a read-only root", func() error {
			for _, vm := range c.VolumeMounts {
				if vm.MountPath == "/tmp" && !vm.ReadOnly {
					return nil
				}
			}
			return fmt.Errorf("no writable /tmp: apps that use it would fail on the read-only root filesystem")
		}},
		{"--config is a file of the mounted ConfigMap", func() error {
			cfg, err := configArg(c.Args)
			if err != nil {
				return err
			}
			v, err := mountedVolume(pod, c, path.Dir(cfg))
			if err != nil {
				return err
			}
			dir := t.TempDir()
			if err := m.materialize(v, dir); err != nil {
				return err
			}
			if _, err := os.Stat(filepath.Join(dir, path.Base(cfg))); err != nil {
				return fmt.Errorf("--config %s: the volume mounted at %s has no %s", cfg, path.Dir(cfg), path.Base(cfg))
			}
			return nil
		}},
		{"PriorityClass is preemptible, never preempts, not default", func() error {
			for _, pc := range m.PriorityClasses {
				if pc.Value >= 0 || pc.GlobalDefault || pc.PreemptionPolicy != "Never" {
					return fmt.Errorf("PriorityClass %s: value %d, globalDefault %v, preemptionPolicy %q: want < 0, false, Never", pc.Metadata.Name, pc.Value, pc.GlobalDefault, pc.PreemptionPolicy)
				}
			}
			if n := pod.PriorityClassName; n != "" && !slices.ContainsFunc(m.PriorityClasses, func(pc priorityClass) bool { return pc.Metadata.Name == n }) {
				return fmt.Errorf("priorityClassName %s is not defined", n)
			}
			return nil
		}},
		{"no tolerations by default", func() error {
			if len(pod.Tolerations) != 0 {
				return fmt.Errorf("tolerations put boincd on tainted nodes; leave that to the operator")
			}
			return nil
		}},
	}
	for _, ck := range checks {
		t.Run(ck.name, func(t *testing.T) {
			if err := ck.check(); err != nil {
				t.Error(err)
			}
		})
	}
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

// mountedVolume finds the volume the container mounts at exactly dir.
func mountedVolume(pod podSpec, c container, dir string) (volume, error) {
	for _, vm := range c.VolumeMounts {
		if path.Clean(vm.MountPath) != path.Clean(dir) {
			continue
		}
		for _, v := range pod.Volumes {
			if v.Name == vm.Name {
				return v, nil
			}
		}
	}
	return volume{}, fmt.Errorf("no volume mounted at %s", dir)
}

// TestRenderedConfig lays out the config volume as the kubelet would and
// loads it with the daemon's own config loader, with the container's
// environment: what boincd would do at start.
func TestRenderedConfig(t *testing.T) {
	m := loadManifest(t)
	pod := m.DaemonSets[0].Spec.Template.Spec
	c := pod.Containers[0]
	cfgPath, err := configArg(c.Args)
	if err != nil {
		t.Fatal(err)
	}
	v, err := mountedVolume(pod, c, path.Dir(cfgPath))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := m.materialize(v, dir); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	for _, e := range c.Env {
		env[e.Name] = e.Value
	}
	cfg, err := config.Load(filepath.Join(dir, path.Base(cfgPath)), false, func(k string) string { return env[k] })
	if err != nil {
		t.Fatalf("boincd would refuse this config: %v", err)
	}
	if len(cfg.Projects) != 1 {
		t.Fatalf("config has %d projects, want 1", len(cfg.Projects))
	}
	keys, _ := m.secretData(m.Secrets[0].Metadata.Name)
	tests := []struct {
		what      string
		got, want any
	}{
		{"project URL", cfg.Projects[0].URL, "https://einsteinathome.org/"},
		{"account key read from the Secret", cfg.Projects[0].Authenticator, keys["account_key"]},
		{"resource share", cfg.Projects[0].ResourceShare, 100.0},
		{"log format", cfg.Log.Format, "json"},
		{"GUI RPC stays on loopback", cfg.GUIRPC.Address, "127.0.0.1:31416"},
		{"data_dir unset (the image passes --dir, so it would be ignored)", cfg.DataDir, ""},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s = %v, want %v", tt.what, tt.got, tt.want)
		}
	}
	if cfg.AccountManager.Enabled() {
		t.Errorf("the account manager block is active by default: %+v", cfg.AccountManager)
	}

	// Uncommented, the [account_manager] block joins the AM with the
	// Secret's password, kept as its hash.
	for i := range m.ConfigMaps {
		cm := &m.ConfigMaps[i]
		var lines []string
		for _, l := range strings.Split(cm.Data["boincd.toml"], "\n") {
			for _, k := range []string{"[account_manager]", "url =", "user =", "password_file ="} {
				if rest, ok := strings.CutPrefix(l, "#"); ok && strings.HasPrefix(rest, k) {
					l = rest
				}
			}
			lines = append(lines, l)
		}
		cm.Data["boincd.toml"] = strings.Join(lines, "\n")
	}
	// The operator's Secret with the AM password.
	var amSecret secret
	amSecret.Metadata.Name = "boincd-account-manager"
	amSecret.StringData = map[string]string{"am_password": "s3cret"}
	m.Secrets = append(m.Secrets, amSecret)
	dir = t.TempDir()
	if err := m.materialize(v, dir); err != nil {
		t.Fatal(err)
	}
	cfg, err = config.Load(filepath.Join(dir, path.Base(cfgPath)), false, func(k string) string { return env[k] })
	if err != nil {
		t.Fatalf("boincd would refuse the config with [account_manager] uncommented: %v", err)
	}
	sum := md5.Sum([]byte("s3cret" + strings.ToLower(cfg.AccountManager.User)))
	if am := cfg.AccountManager; am.URL != "https://bam.boincstats.com/" || am.PasswordHash != hex.EncodeToString(sum[:]) {
		t.Errorf("account manager %+v", am)
	}
}
