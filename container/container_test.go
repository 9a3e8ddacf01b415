package container

import "testing"

func TestParseVersion(t *testing.T) {
	tests := []struct {
		out  string
		typ  Type
		ver  string
		name string
	}{
		{name: "podman", out: "podman version 4.9.3\n", typ: Podman, ver: "4.9.3"},
		{name: "docker", out: "Docker version 24.0.7, build afdd53b\n", typ: Docker, ver: "24.0.7"},
		{name: "podman-docker notice first", out: "Emulate Docker CLI using podman. Create /etc/containers/nodocker to quiet msg.\npodman version 5.0.2\n", typ: Podman, ver: "5.0.2"},
		{name: "third line is too late", out: "a\nb\npodman version 1\n"},
		{name: "empty", out: ""},
		{name: "other program", out: "Usage: docker-ish [options]\n"},
		{name: "no number", out: "podman version\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			typ, ver := ParseVersion(tc.out)
			if typ != tc.typ || ver != tc.ver {
				t.Errorf("ParseVersion(%q) = %v %q, want %v %q", tc.out, typ, ver, tc.typ, tc.ver)
			}
		})
	}
}

func TestNames(t *testing.T) {
	tests := []struct {
		name  string
		owned bool
	}{
		{"boinc__proj__wu", true},
		{"localhost/boinc__proj__wu:latest", true},
		{"BOINC__Proj__WU", true},
		{"docker.io/library/boinc__proj__wu:latest", false},
		{"boinc/client:latest", false},
		{"myboinc__x", false},
		{"hello-world:latest", false},
	}
	for _, tc := range tests {
		if got := Owned(tc.name); got != tc.owned {
			t.Errorf("Owned(%q) = %v, want %v", tc.name, got, tc.owned)
		}
	}
	if got := ImageName("Einstein.Phys.UWM.edu", "WU_1"); got != "boinc__einstein.phys.uwm.edu__wu_1" {
		t.Errorf("ImageName = %q", got)
	}
	if got := ContainerName("p", "R_0"); got != "boinc__p__r_0" {
		t.Errorf("ContainerName = %q", got)
	}
}

func TestIsApp(t *testing.T) {
	for pc, want := range map[string]bool{"docker": true, "docker_cpu": true, "linux_Docker_x": true, "": false, "vbox64": false, "cuda": false} {
		if IsApp(pc) != want {
			t.Errorf("IsApp(%q) = %v", pc, !want)
		}
	}
}

func TestSummary(t *testing.T) {
	tests := []struct {
		r    Result
		want string
	}{
		{Result{Engine: Engine{Type: Podman, Version: "4.9.3", CLI: "podman"}}, "Docker: version 4.9.3 (podman)"},
		{Result{Engine: Engine{Type: Docker, Version: "24.0.7", CLI: "docker"}}, "Docker: version 24.0.7 (docker)"},
		{Result{Reason: "podman not installed; docker not installed"}, "Docker: not usable: podman not installed; docker not installed"},
		{Result{Disabled: true}, "Docker: not used (dont_use_docker)"},
	}
	for _, tc := range tests {
		if got := tc.r.Summary(); got != tc.want {
			t.Errorf("Summary = %q, want %q", got, tc.want)
		}
	}
}
