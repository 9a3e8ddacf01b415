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
