//go:build unix

package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/boincd/boincd/container"
)

// The probe's container section, with a scripted engine on a PATH of its
// own (the machine's real docker or podman is never run).
func TestProbeContainers(t *testing.T) {
	tests := []struct {
		name    string
		version string
		run     string
		want    []string // in the table
		wantXML string   // in host_info ("" : no docker elements)
	}{
		{
			name: "podman works", version: "podman version 4.9.3", run: "echo hello",
			want:    []string{"Containers", "podman 4.9.3 (program podman; docker_type 2 in host_info)"},
			wantXML: "    <docker_version>4.9.3</docker_version>\n    <docker_type>2</docker_type>\n",
		},
		{
			name: "hello-world fails", version: "podman version 4.9.3",
			run:  "echo 'Error: crun: cgroups in hybrid mode not supported' >&2; exit 126",
			want: []string{"none: podman 4.9.3 cannot run a container: exit status 126: Error: crun: cgroups in hybrid mode not supported; docker not installed"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			bin := t.TempDir()
			script := "#!/bin/sh\ncase \"$1\" in\n--version) echo '" + tc.version + "';;\nrun) " + tc.run + ";;\nesac\n"
			if err := os.WriteFile(filepath.Join(bin, "podman"), []byte(script), 0o755); err != nil {
				t.Fatal(err)
			}
			doc := probe(context.Background(), t.TempDir(), false, 0, container.Exec{Env: []string{"PATH=" + bin}})
			var b bytes.Buffer
			writeProbe(&b, &doc)
			for _, w := range tc.want {
				if !strings.Contains(b.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, b.String())
				}
			}
			if tc.wantXML == "" && strings.Contains(doc.HostInfo, "docker") || !strings.Contains(doc.HostInfo, tc.wantXML) {
				t.Errorf("host_info:\n%s\nwant %q", doc.HostInfo, tc.wantXML)
			}
		})
	}
}
