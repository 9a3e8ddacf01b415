package importer

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/boincd/boincd/daemon"
	"github.com/boincd/boincd/importer/importtest"
)

// A host in an account manager stays in it: the membership comes over,
// and the projects the AM attached are its, not the config's.
func TestImportAcctMgr(t *testing.T) {
	src := importtest.Build(t, importtest.Options{StateFile: "client_state_after_report.xml"})
	state := filepath.Join(src.Path, "client_state.xml")
	b, err := os.ReadFile(state)
	if err != nil {
		t.Fatal(err)
	}
	b = []byte(strings.Replace(string(b), "<project>\n", "<project>\n    <attached_via_acct_mgr/>\n", 1))
	if err := os.WriteFile(state, b, 0o644); err != nil {
		t.Fatal(err)
	}
	// 7.20's acct_mgr_url.xml holds everything; the login file of an
	// older client is read for what the URL file lacks.
	url := "<acct_mgr>\n    <name>BAM!</name>\n    <url>https://bam.boincstats.com</url>\n    <signing_key>\n1024\nabcd\n.\n</signing_key>\n" +
		"    <login>alice</login>\n    <password_hash>0123abcd</password_hash>\n    <previous_host_cpid>cp</previous_host_cpid>\n" +
		"    <next_rpc_time>1795270000.000000</next_rpc_time>\n    <opaque>\n<host_id>5</host_id>\n    </opaque>\n    <no_project_notices>0</no_project_notices>\n    <dynamic>1</dynamic>\n</acct_mgr>\n"
	login := "<acct_mgr_login>\n<user_name>Alice</user_name>\n<team_name>T</team_name>\n</acct_mgr_login>\n"
	if err := os.WriteFile(filepath.Join(src.Path, acctMgrURLFile), []byte(url), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src.Path, acctMgrLoginFile), []byte(login), 0o644); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), "boincd")
	sum, err := runImport(t, src.Path, dst, false)
	if err != nil {
		t.Fatalf("Import: %v", err)
	}
	if len(sum.Projects) != 1 || !strings.Contains(sum.Projects[0].Config, "managed by the account manager https://bam.boincstats.com/") {
		t.Errorf("summary %+v", sum.Projects)
	}
	if !strings.Contains(strings.Join(sum.Carried, "\n"), "account manager BAM!") {
		t.Errorf("carried %q", sum.Carried)
	}
	snap := loadState(t, dst)
	if p := snap.Projects[0]; p.Origin != daemon.OriginAcctMgr {
		t.Errorf("project origin %q, want %q", p.Origin, daemon.OriginAcctMgr)
	}
	var rec map[string]any
	if err := json.Unmarshal(snap.Meta[daemon.AcctMgrMetaKey], &rec); err != nil {
		t.Fatalf("membership record: %v (%q)", err, snap.Meta[daemon.AcctMgrMetaKey])
	}
	for k, want := range map[string]any{"url": "https://bam.boincstats.com/", "name": "BAM!", "login_name": "alice", "password_hash": "0123abcd",
		"opaque": "<host_id>5</host_id>", "user_name": "Alice", "team_name": "T", "dynamic": true, "signing_key": "1024\nabcd\n.\n"} {
		if rec[k] != want {
			t.Errorf("membership %s = %v, want %v", k, rec[k], want)
		}
	}
	if cfg, _ := os.ReadFile(filepath.Join(dst, "boincd.toml")); strings.Contains(string(cfg), importtest.FixtureURL) {
		t.Errorf("the AM's project was added to boincd.toml:\n%s", cfg)
	}
}

func TestImportAcctMgrWithoutKeyRefused(t *testing.T) {
	src := importtest.Build(t, importtest.Options{StateFile: "client_state_after_report.xml"})
	if err := os.WriteFile(filepath.Join(src.Path, acctMgrURLFile), []byte("<acct_mgr>\n<name>X</name>\n<url>https://x/</url>\n</acct_mgr>\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := runImport(t, src.Path, filepath.Join(t.TempDir(), "boincd"), true); err == nil || !strings.Contains(err.Error(), "has no signing key") {
		t.Errorf("import of an AM without a key: %v", err)
	}
}
