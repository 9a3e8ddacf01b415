package guirpc

import (
	"encoding/xml"
	"strings"
	"testing"

	"github.com/boincd/boincd/boinc"
)

// A project's web links reach the Manager as the C++ client sends them,
// but escaped: text the server pasted into them stays text.
func TestProjectWebLinks(t *testing.T) {
	p := ProjectInfo{Project: boinc.Project{MasterURL: "http://x/", GUIURLs: []boinc.GUIURL{
		{Name: "Team", Description: `R&D <Lab> "x"</gui_url></gui_urls></project><project>`, URL: "http://x/t?a=1&b=2"},
		{Name: "Your account", URL: "https://x/home.php"},
	}}}
	var w xw
	writeProject(&w, &State{}, &p)
	out := w.String()
	var doc struct {
		URLs []struct {
			Name        string `xml:"name"`
			Description string `xml:"description"`
			URL         string `xml:"url"`
		} `xml:"gui_urls>gui_url"`
	}
	if err := xml.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(doc.URLs) != 2 || doc.URLs[0].Description != p.GUIURLs[0].Description || doc.URLs[0].URL != p.GUIURLs[0].URL || doc.URLs[1].Name != "Your account" {
		t.Errorf("links %+v\n%s", doc.URLs, out)
	}
	if strings.Count(out, "<project>") != 1 {
		t.Errorf("markup from a link leaked:\n%s", out)
	}
}

// get_host_info carries the container engine as HOST_INFO::write does:
// after wsl_available, both elements or neither.
func TestHostInfoDocker(t *testing.T) {
	tests := []struct {
		name string
		host boinc.Host
		want string // "" : no docker elements
	}{
		{"podman", boinc.Host{DockerVersion: "4.9.3", DockerType: 2},
			"    <wsl_available>0</wsl_available>\n    <docker_version>4.9.3</docker_version>\n    <docker_type>2</docker_type>\n"},
		{"docker", boinc.Host{DockerVersion: "24.0.7", DockerType: 1},
			"    <docker_version>24.0.7</docker_version>\n    <docker_type>1</docker_type>\n"},
		{"none", boinc.Host{}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var w xw
			writeHostInfo(&w, &HostInfo{Host: tc.host})
			out := w.String()
			if tc.want == "" {
				if strings.Contains(out, "docker") {
					t.Errorf("docker elements without an engine:\n%s", out)
				}
				return
			}
			if !strings.Contains(out, tc.want) {
				t.Errorf("get_host_info lacks %q:\n%s", tc.want, out)
			}
		})
	}
}
