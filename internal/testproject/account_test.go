package testproject

import (
	"strings"
	"testing"
)

func getText(t *testing.T, url string) string {
	t.Helper()
	code, b := get(t, url, nil)
	if code != 200 {
		t.Fatalf("GET %s: status %d", url, code)
	}
	return string(b)
}

// The account web RPCs answer as BOINC server 1.6.2 does (checked with the
// same requests against it).
func TestAccountWebRPCs(t *testing.T) {
	s := startServer(t, Config{Name: "acct", Accounts: []Account{{Email: "A@B.org", Password: "pw12345678"}}})
	u := s.URL()
	hash := PasswdHash("pw12345678", "a@b.org")
	key, ok := s.AccountKey("a@b.org")
	if !ok || len(key) != 32 {
		t.Fatalf("account key %q %v", key, ok)
	}
	const hdr = "<?xml version=\"1.0\" encoding=\"ISO-8859-1\" ?>\n"
	errReply := func(num, msg string) string {
		return hdr + "<error>\n    <error_num>" + num + "</error_num>\n    <error_msg>" + msg + "</error_msg>\n</error>\n"
	}
	other := PasswdHash("other", "a@b.org")
	for _, tc := range []struct{ query, want string }{
		{"lookup_account.php?email_addr=a%40b%2Eorg&passwd_hash=" + hash, hdr + "<account_out>\n<authenticator>" + key + "</authenticator>\n</account_out>\n"},
		{"lookup_account.php?email_addr=A%40B%2EORG&passwd_hash=" + hash, hdr + "<account_out>\n<authenticator>" + key + "</authenticator>\n</account_out>\n"},
		{"lookup_account.php?email_addr=a%40b%2Eorg&passwd_hash=" + md5Hex([]byte(key+"a@b.org")), hdr + "<account_out>\n<authenticator>" + key + "</authenticator>\n</account_out>\n"},
		{"lookup_account.php?email_addr=a%40b%2Eorg&passwd_hash=" + other, errReply("-206", "Invalid password")},
		{"lookup_account.php?email_addr=x%40b%2Eorg&passwd_hash=" + hash, errReply("-136", "Not found")},
		{"lookup_account.php", errReply("-1", "missing or bad parameter: email_addr")},
		{"create_account.php?email_addr=a%40b%2Eorg&passwd_hash=" + hash + "&user_name=Al", hdr + " <account_out>\n   <authenticator>" + key + "</authenticator>\n</account_out>\n"},
		{"create_account.php?email_addr=a%40b%2Eorg&passwd_hash=" + other + "&user_name=Al", errReply("-137", "Name or email address is not unique")},
		{"create_account.php?email_addr=a%40b%2Eorg&passwd_hash=0000&user_name=Al", errReply("-1", "password hash length not 32")},
		{"create_account.php?email_addr=c%40b%2Eorg&passwd_hash=" + hash + "&user_name=", errReply("-188", "user name must be nonempty")},
		{"create_account.php?email_addr=notanemail&passwd_hash=" + hash + "&user_name=Bo", errReply("-205", "Email address has invalid syntax")},
	} {
		if got := getText(t, u+tc.query); got != tc.want {
			t.Errorf("%s:\n%q\nwant\n%q", tc.query, got, tc.want)
		}
	}
	nh := PasswdHash("new pass", "new@b.org")
	got := getText(t, u+"create_account.php?email_addr=new%40b%2Eorg&passwd_hash="+nh+"&user_name=New&team_name=T&consent_flag=1&source=tool")
	nk, ok := s.AccountKey("NEW@b.org")
	if !ok || !strings.Contains(got, "<authenticator>"+nk+"</authenticator>") || nk == key {
		t.Errorf("create_account: %q, stored %q %v", got, nk, ok)
	}
	if got := getText(t, u+"lookup_account.php?email_addr=new%40b%2Eorg&passwd_hash="+nh); !strings.Contains(got, nk) {
		t.Errorf("lookup of the new account: %q", got)
	}
	if rpcs := s.AccountRPCs(); len(rpcs) != 13 || rpcs[3].ErrorNum != -206 || rpcs[11].Path != "create_account.php" || !strings.Contains(rpcs[11].Query, "consent_flag=1") {
		t.Errorf("recorded %+v", rpcs)
	}

	cfg := getText(t, u+"get_project_config.php")
	for _, want := range []string{hdr + "<project_config>\n", "<name>acct</name>", "<master_url>" + u + "</master_url>", "<min_passwd_length>6</min_passwd_length>", "<platform_name>"} {
		if !strings.Contains(cfg, want) {
			t.Errorf("project_config lacks %q:\n%s", want, cfg)
		}
	}
	if strings.Contains(cfg, "account_creation_disabled") {
		t.Errorf("project_config:\n%s", cfg)
	}
}

func TestAccountCreationDisabled(t *testing.T) {
	s := startServer(t, Config{AccountCreationDisabled: true, Authenticator: "the-key",
		Accounts: []Account{{Email: "a@b.org", Password: "p"}}})
	if cfg := getText(t, s.URL()+"get_project_config.php"); !strings.Contains(cfg, "<account_creation_disabled/>") {
		t.Errorf("project_config:\n%s", cfg)
	}
	got := getText(t, s.URL()+"create_account.php?email_addr=n%40b%2Eorg&passwd_hash="+PasswdHash("p", "n@b.org")+"&user_name=N")
	if !strings.Contains(got, "<error_num>-208</error_num>") || !strings.Contains(got, "Account creation is disabled") {
		t.Errorf("create_account: %s", got)
	}
	// With one account key for the project, every account has it.
	if k, _ := s.AccountKey("a@b.org"); k != "the-key" {
		t.Errorf("account key %q", k)
	}
}
