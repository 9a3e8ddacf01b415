package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestAccountManagerConfig(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "pw"), []byte("p\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "key"), []byte(" amkey \n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "hashed"), []byte("hash:abc"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, toml string
		env        map[string]string
		wantErr    string
		check      func(*testing.T, AccountManager)
	}{
		{"none", "", nil, "", func(t *testing.T, a AccountManager) {
			if a.Enabled() {
				t.Errorf("enabled: %+v", a)
			}
		}},
		{"password file", "[account_manager]\nurl = \"https://bam.example/\"\nuser = \"N\"\npassword_file = \"pw\"\n", nil, "", func(t *testing.T, a AccountManager) {
			// MD5("p" + "n")
			if !a.Enabled() || a.PasswordHash != "ded0804cf804b6d26e37953dc2dbc505" || a.Authenticator != "" {
				t.Errorf("%+v", a)
			}
		}},
		{"hash given", "[account_manager]\nurl = \"https://bam.example\"\nuser = \"N\"\npassword_file = \"hashed\"\n", nil, "", func(t *testing.T, a AccountManager) {
			if a.PasswordHash != "abc" || a.URL != "https://bam.example/" {
				t.Errorf("%+v", a)
			}
		}},
		{"account key", "[account_manager]\nurl = \"https://bam.example/\"\nauthenticator_file = \"key\"\n", nil, "", func(t *testing.T, a AccountManager) {
			if a.Authenticator != "amkey" || a.PasswordHash != "" {
				t.Errorf("%+v", a)
			}
		}},
		{"env", "", map[string]string{"BOINCD_ACCOUNT_MANAGER_URL": "https://su.example/", "BOINCD_ACCOUNT_MANAGER_USER": "N", "BOINCD_ACCOUNT_MANAGER_PASSWORD": "p"}, "", func(t *testing.T, a AccountManager) {
			if a.URL != "https://su.example/" || a.PasswordHash != "ded0804cf804b6d26e37953dc2dbc505" || a.password != "" {
				t.Errorf("%+v", a)
			}
		}},
		{"no url", "[account_manager]\nuser = \"N\"\npassword_file = \"pw\"\n", nil, "boincd.toml:1: [account_manager] needs url", nil},
		{"bad url", "[account_manager]\nurl = \"bam.example\"\nuser = \"N\"\npassword_file = \"pw\"\n", nil, "is not an http or https URL", nil},
		{"both", "[account_manager]\nurl = \"https://b/\"\nuser = \"N\"\npassword_file = \"pw\"\nauthenticator_file = \"key\"\n", nil, "not both", nil},
		{"no user", "[account_manager]\nurl = \"https://b/\"\npassword_file = \"pw\"\n", nil, "password_file needs user", nil},
		{"no login", "[account_manager]\nurl = \"https://b/\"\n", nil, "needs user and password_file, or authenticator_file", nil},
		{"missing file", "[account_manager]\nurl = \"https://b/\"\nuser = \"N\"\npassword_file = \"nope\"\n", nil, "[account_manager] password_file: open", nil},
		{"unknown key", "[account_manager]\nurl = \"https://b/\"\npassword = \"clear\"\n", nil, "unknown setting", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(dir, "boincd.toml")
			if err := os.WriteFile(path, []byte(c.toml), 0o644); err != nil {
				t.Fatal(err)
			}
			cfg, err := Load(path, false, func(k string) string { return c.env[k] })
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("error %v, want %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			c.check(t, cfg.AccountManager)
		})
	}
}
