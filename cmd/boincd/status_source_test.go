package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/boincd/boincd/guirpc/client"
)

func TestProjectSources(t *testing.T) {
	dir := t.TempDir()
	toml := "[[project]]\nurl = \"http://conf.example/\"\nauthenticator = \"k\"\n[[project]]\nurl = \"http://both.example/\"\nauthenticator = \"k\"\n"
	if err := os.WriteFile(filepath.Join(dir, "boincd.toml"), []byte(toml), 0o644); err != nil {
		t.Fatal(err)
	}
	st := &client.State{Projects: []client.Project{
		{MasterURL: "http://conf.example/"},
		{MasterURL: "http://both.example/", AttachedViaAcctMgr: true},
		{MasterURL: "http://am.example/", AttachedViaAcctMgr: true},
		{MasterURL: "http://gui.example/"},
	}}
	cases := []struct {
		name string
		urls map[string]bool
		want []string
	}{
		{"config read", configProjectURLs("", dir), []string{"config", "config", "acct_mgr", "gui_rpc"}},
		{"no config file", configProjectURLs("", t.TempDir()), []string{"gui_rpc", "acct_mgr", "acct_mgr", "gui_rpc"}},
		{"named config missing", configProjectURLs(filepath.Join(dir, "nope.toml"), dir), []string{"", "acct_mgr", "acct_mgr", ""}},
	}
	for _, c := range cases {
		doc := &statusDoc{}
		for _, p := range st.Projects {
			doc.Projects = append(doc.Projects, projectDoc{URL: p.MasterURL})
		}
		setProjectSources(doc, st, c.urls)
		for i, w := range c.want {
			if got := doc.Projects[i].Source; got != w {
				t.Errorf("%s: %s source %q, want %q", c.name, doc.Projects[i].URL, got, w)
			}
		}
	}
}
