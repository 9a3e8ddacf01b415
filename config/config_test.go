package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"syntax", "data_dir = \n", "x.toml:2: expected value"},
		{"type", "[prefs]\nwork_buf_min_days = \"lots\"\n", "x.toml:2:"},
		{"unknown key", "[prefs]\nwork_buf_mni_days = 1\n", `x.toml:2: unknown setting "prefs.work_buf_mni_days"`},
		{"no key", "[[project]]\nurl = \"http://a/\"\n", "x.toml:1: project http://a/: no authenticator"},
		{"bad url", "\n[[project]]\nurl = \"ftp://a/\"\nauthenticator=\"k\"\n", "x.toml:2: project #1"},
		{"dup", "[[project]]\nurl = \"http://A/\"\nauthenticator=\"k\"\n[[project]]\nurl = \"http://a\"\nauthenticator=\"k\"\n", "x.toml:4: project #2: http://a/ is already listed"},
		{"range", "[prefs]\nmax_ncpus_pct = 150\n", "x.toml:2: prefs.max_ncpus_pct = 150"},
		{"both keys", "[[project]]\nurl=\"http://a/\"\nauthenticator=\"k\"\nauthenticator_file=\"f\"\n", "not both"},
		{"level", "[log]\nlevel = \"loud\"\n", "x.toml:2: log.level"},
		{"ca bundle relative", "ca_bundle = \"ca.pem\"\n", "x.toml:1: ca_bundle \"ca.pem\": want an absolute path"},
		{"ca bundle missing", "ca_bundle = \"/nonexistent/ca.pem\"\n", "x.toml:1: ca_bundle \"/nonexistent/ca.pem\": not a readable regular file"},
		{"nan pref", "[prefs]\nwork_buf_min_days = nan\n", "x.toml:2: prefs.work_buf_min_days = NaN"},
		{"infinite share", "[[project]]\nurl = \"http://a/\"\nauthenticator = \"k\"\nresource_share = inf\n", "resource_share +Inf"},
		{"metrics not loopback", "[metrics]\nenabled = true\naddress = \"0.0.0.0:9464\"\n", "x.toml:3: metrics.address \"0.0.0.0:9464\" is not loopback"},
		{"gui rpc bad IP and port", "[metrics]\naddress = \"127.0.0.1:9464\"\n[gui_rpc]\naddress = \"999.1.1.1:99999\"\n", `x.toml:4: gui_rpc.address "999.1.1.1:99999": port "99999"`},
		{"gui rpc bad IP", "\n[gui_rpc]\naddress = \"999.1.1.1:31416\"\n", `x.toml:3: gui_rpc.address "999.1.1.1:31416": host "999.1.1.1": not an IP address or host name`},
		{"gui rpc no port", "[gui_rpc]\naddress = \"127.0.0.1\"\n", `x.toml:2: gui_rpc.address "127.0.0.1": want HOST:PORT`},
		{"gui rpc port word", "[gui_rpc]\naddress = \"localhost:http\"\n", `x.toml:2: gui_rpc.address "localhost:http": port "http"`},
		{"gui rpc bad name", "gui_rpc.address = \"my_host!:1\"\n", `x.toml:1: gui_rpc.address "my_host!:1": host`},
		{"metrics bad address", "[metrics]\nenabled = true\naddress = \"nowhere\"\n", "x.toml:3: metrics.address \"nowhere\""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("x.toml", []byte(tt.in))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

// TestGUIRPCAddressAccepted: the forms the daemon can listen on pass.
func TestGUIRPCAddressAccepted(t *testing.T) {
	for _, a := range []string{"", "off", "127.0.0.1:31416", "127.0.0.1:0", ":31416", "0.0.0.0:65535", "[::1]:31416", "[fe80::1%eth0]:31416", "localhost:31416", "boinc-host.example.org:31416", "host1:1"} {
		if err := CheckGUIRPCAddress(a); err != nil {
			t.Errorf("CheckGUIRPCAddress(%q) = %v", a, err)
		}
	}
	for _, a := range []string{"999.1.1.1:31416", "1.2.3:31416", "127.0.0.1:-1", "127.0.0.1:65536", "127.0.0.1", "[::1:31416", "a b:1", "-host:1"} {
		if err := CheckGUIRPCAddress(a); err == nil {
			t.Errorf("CheckGUIRPCAddress(%q) passed", a)
		}
	}
	// The environment override is checked the same way.
	_, err := Load(filepath.Join(t.TempDir(), FileName), true, func(k string) string {
		if k == "BOINCD_GUI_RPC_ADDRESS" {
			return "127.0.0.1:99999"
		}
		return ""
	})
	if err == nil || !strings.Contains(err.Error(), "environment: gui_rpc.address \"127.0.0.1:99999\"") {
		t.Errorf("BOINCD_GUI_RPC_ADDRESS=127.0.0.1:99999: %v", err)
	}
}

func TestLoadFullAndEnv(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "key"), []byte("abc123\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, FileName)
	in := `
drop_results_on_detach = true
[prefs]
work_buf_min_days = 0.2
[[project]]
url = "HTTP://Example.ORG//a"
authenticator_file = "key"
resource_share = 50
[[project]]
url = "http://b.example/"
authenticator = "k2"
no_new_tasks = true
`
	if err := os.WriteFile(path, []byte(in), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"BOINCD_WORK_BUF_ADDITIONAL_DAYS": "0.05", "BOINCD_PROJECT_URL": "http://c.example", "BOINCD_PROJECT_AUTHENTICATOR": "k3"}
	c, err := Load(path, false, func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Projects) != 3 {
		t.Fatalf("projects = %d", len(c.Projects))
	}
	p := c.Projects[0]
	if p.URL != "http://example.org/a/" || p.Authenticator != "abc123" || p.ResourceShare != 50 {
		t.Fatalf("project 0 = %+v", p)
	}
	if c.Projects[1].ResourceShare != 100 || !c.Projects[1].NoNewTasks {
		t.Fatalf("project 1 = %+v", c.Projects[1])
	}
	if c.Projects[2].URL != "http://c.example/" {
		t.Fatalf("env project = %+v", c.Projects[2])
	}
	bp := c.BoincPrefs()
	if bp.WorkBufMinDays != 0.2 || bp.WorkBufAdditionalDays != 0.05 || bp.CPUSchedulingPeriodMinutes != 60 {
		t.Fatalf("prefs = %+v", bp)
	}
	if !c.DropResultsOnDetach {
		t.Fatal("drop_results_on_detach lost")
	}
}

func TestMissingFile(t *testing.T) {
	dir := t.TempDir()
	c, err := Load(filepath.Join(dir, FileName), true, func(string) string { return "" })
	if err != nil || len(c.Projects) != 0 {
		t.Fatalf("c=%+v err=%v", c, err)
	}
	if _, err := Load(filepath.Join(dir, FileName), false, nil); err == nil {
		t.Fatal("missing file accepted when required")
	}
	_, err = Load(filepath.Join(dir, FileName), true, func(k string) string {
		if k == "BOINCD_MAX_NCPUS_PCT" {
			return "lots"
		}
		return ""
	})
	if err == nil || !strings.Contains(err.Error(), "BOINCD_MAX_NCPUS_PCT") {
		t.Fatalf("bad env accepted: %v", err)
	}
}

func TestAuthenticatorFileErrors(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, FileName)
	os.WriteFile(filepath.Join(dir, "empty"), nil, 0o600)
	os.WriteFile(path, []byte("[[project]]\nurl=\"http://a/\"\nauthenticator_file=\"empty\"\n"), 0o600)
	if _, err := Load(path, false, nil); err == nil || !strings.Contains(err.Error(), FileName+":1") {
		t.Fatalf("err = %v", err)
	}
	os.WriteFile(path, []byte("[[project]]\nurl=\"http://a/\"\nauthenticator_file=\"nope\"\n"), 0o600)
	if _, err := Load(path, false, nil); err == nil || !strings.Contains(err.Error(), "authenticator_file") {
		t.Fatalf("err = %v", err)
	}
}

func TestAppUserAndRoot(t *testing.T) {
	tests := []struct {
		name      string
		in        string
		env       map[string]string
		user      string
		allowRoot bool
		wantErr   string
	}{
		{name: "defaults", in: ""},
		{name: "app user", in: "app_user = \"boinc-apps\"\n", user: "boinc-apps"},
		{name: "allow root", in: "allow_root_apps = true\n", allowRoot: true},
		{name: "root refused", in: "\napp_user = \"root\"\n", wantErr: "x.toml:2: app_user \"root\": apps must not run as root"},
		{name: "uid 0 refused", in: "app_user = \"0\"\n", wantErr: "x.toml:1: app_user \"0\""},
		{name: "hostile name", in: "\n\napp_user = \"-oProxyCommand\"\n", wantErr: "x.toml:3: app_user \"-oProxyCommand\": not a user name"},
		{name: "spaces", in: "app_user = \"a b\"\n", wantErr: "x.toml:1: app_user \"a b\": not a user name"},
		{name: "type", in: "allow_root_apps = \"yes\"\n", wantErr: "x.toml:1:"},
		{name: "env user", env: map[string]string{"BOINCD_APP_USER": "apps"}, user: "apps"},
		{name: "env root", env: map[string]string{"BOINCD_ALLOW_ROOT_APPS": "true"}, allowRoot: true},
		{name: "env root off wins", in: "allow_root_apps = true\n", env: map[string]string{"BOINCD_ALLOW_ROOT_APPS": "0"}},
		{name: "env root bad", env: map[string]string{"BOINCD_ALLOW_ROOT_APPS": "sure"}, wantErr: "BOINCD_ALLOW_ROOT_APPS=\"sure\""},
		{name: "env user bad", env: map[string]string{"BOINCD_APP_USER": "root"}, wantErr: "environment: app_user \"root\""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "x.toml")
			if err := os.WriteFile(path, []byte(tt.in), 0o600); err != nil {
				t.Fatal(err)
			}
			c, err := Load(path, false, func(k string) string { return tt.env[k] })
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want it to contain %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.AppUser != tt.user || c.AllowRootApps != tt.allowRoot {
				t.Fatalf("app_user = %q, allow_root_apps = %v; want %q, %v", c.AppUser, c.AllowRootApps, tt.user, tt.allowRoot)
			}
		})
	}
}

func TestDontUseDockerFromEnvironment(t *testing.T) {
	for _, tc := range []struct {
		env  string
		want bool
		bad  bool
	}{{"", false, false}, {"true", true, false}, {"0", false, false}, {"maybe", false, true}} {
		c, err := Load(filepath.Join(t.TempDir(), "missing.toml"), true, func(k string) string {
			if k == "BOINCD_DONT_USE_DOCKER" {
				return tc.env
			}
			return ""
		})
		if (err != nil) != tc.bad {
			t.Errorf("BOINCD_DONT_USE_DOCKER=%q: err %v", tc.env, err)
			continue
		}
		if !tc.bad && c.DontUseDocker != tc.want {
			t.Errorf("BOINCD_DONT_USE_DOCKER=%q: dont_use_docker %v, want %v", tc.env, c.DontUseDocker, tc.want)
		}
	}
}
