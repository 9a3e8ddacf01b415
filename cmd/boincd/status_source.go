package main

import (
	"os"
	"path/filepath"

	"github.com/boincd/boincd/config"
	"github.com/boincd/boincd/guirpc/client"
)

// Project sources in boincd status: where an attached project comes from,
// by the daemon's rule (daemon/reconcile.go): a project named in
// boincd.toml is the config's even when an account manager lists it too;
// one marked attached_via_acct_mgr is the account manager's; the rest
// were attached over GUI RPC.
const (
	sourceConfig  = "config"
	sourceAcctMgr = "acct_mgr"
	sourceGUIRPC  = "gui_rpc"
)

// configProjectURLs reads the [[project]] URLs of the config the status
// command found (--config, else DIR/boincd.toml); nil when it cannot be
// read, an empty set when it lists none or does not exist.
func configProjectURLs(cfgFile, dir string) map[string]bool {
	path := cfgFile
	if path == "" {
		path = filepath.Join(dir, config.FileName)
	}
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) && cfgFile == "" {
		return map[string]bool{}
	}
	if err != nil {
		return nil
	}
	c, err := config.Parse(path, data)
	if err != nil {
		return nil
	}
	urls := make(map[string]bool, len(c.Projects))
	for _, p := range c.Projects {
		urls[p.URL] = true
	}
	return urls
}

// setProjectSources fills each project's source.
func setProjectSources(doc *statusDoc, st *client.State, configURLs map[string]bool) {
	via := make(map[string]bool, len(st.Projects))
	for i := range st.Projects {
		via[st.Projects[i].MasterURL] = st.Projects[i].AttachedViaAcctMgr
	}
	for i := range doc.Projects {
		p := &doc.Projects[i]
		switch {
		case configURLs[p.URL]:
			p.Source = sourceConfig
		case via[p.URL]:
			p.Source = sourceAcctMgr
		case configURLs != nil:
			p.Source = sourceGUIRPC
		}
	}
}

func sourceText(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
