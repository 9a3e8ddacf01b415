package config

import (
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
)

// AccountManager is [account_manager]: the host joins the account
// manager (BAM!, Science United, a BoincHub) at URL as User, and attaches
// the projects the volunteer chose there. The password is read from
// PasswordFile and kept only as the C++ client's hash; an AM that gave
// the host an account key takes AuthenticatorFile instead.
type AccountManager struct {
	URL               string `toml:"url"`
	User              string `toml:"user"`
	PasswordFile      string `toml:"password_file"`
	AuthenticatorFile string `toml:"authenticator_file"`

	// PasswordHash is MD5(password + lowercase(user)), or the text after
	// "hash:" when the file holds a hash already; filled from
	// PasswordFile (or BOINCD_ACCOUNT_MANAGER_PASSWORD).
	PasswordHash string `toml:"-"`
	// Authenticator is AuthenticatorFile's account key.
	Authenticator string `toml:"-"`
	// password is BOINCD_ACCOUNT_MANAGER_PASSWORD, hashed by finish.
	password string
}

// Enabled: the config names an account manager.
func (a *AccountManager) Enabled() bool { return a.URL != "" }

func (c *Config) validateAccountManager() error {
	a := &c.AccountManager
	if a.URL == "" && a.User == "" && a.PasswordFile == "" && a.AuthenticatorFile == "" && a.password == "" {
		return nil
	}
	where := c.where(c.accountManagerLine("url"))
	if a.URL == "" {
		return fmt.Errorf("%s: [account_manager] needs url", where)
	}
	u, err := url.Parse(a.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%s: [account_manager] url %q is not an http or https URL", where, a.URL)
	}
	if !strings.HasSuffix(a.URL, "/") {
		a.URL += "/"
	}
	hasPass := a.PasswordFile != "" || a.password != ""
	switch {
	case a.AuthenticatorFile != "" && hasPass:
		return fmt.Errorf("%s: [account_manager] takes password_file or authenticator_file, not both", where)
	case a.AuthenticatorFile == "" && !hasPass:
		return fmt.Errorf("%s: [account_manager] needs user and password_file, or authenticator_file", where)
	case hasPass && a.User == "":
		return fmt.Errorf("%s: [account_manager] password_file needs user", where)
	}
	return nil
}

// finishAccountManager reads the password or account key file (relative
// to the config's directory); the clear password is forgotten once
// hashed.
func (c *Config) finishAccountManager(dir string) error {
	a := &c.AccountManager
	read := func(key, path string) (string, error) {
		if !filepath.IsAbs(path) {
			path = filepath.Join(dir, path)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return "", fmt.Errorf("%s: [account_manager] %s: %w", c.where(c.accountManagerLine(key)), key, err)
		}
		v := strings.TrimRight(string(b), "\r\n")
		if v == "" {
			return "", fmt.Errorf("%s: [account_manager] %s %s is empty", c.where(c.accountManagerLine(key)), key, path)
		}
		return v, nil
	}
	switch {
	case a.AuthenticatorFile != "":
		key, err := read("authenticator_file", a.AuthenticatorFile)
		if err != nil {
			return err
		}
		key = strings.TrimSpace(key)
		if strings.ContainsAny(key, " \t\n<>&") {
			return fmt.Errorf("%s: [account_manager] authenticator_file %s does not hold one account key", c.where(c.accountManagerLine("authenticator_file")), a.AuthenticatorFile)
		}
		a.Authenticator = key
	case a.PasswordFile != "":
		pw, err := read("password_file", a.PasswordFile)
		if err != nil {
			return err
		}
		a.PasswordHash = acctMgrHash(a.User, pw)
	case a.password != "":
		a.PasswordHash = acctMgrHash(a.User, a.password)
		a.password = ""
	}
	return nil
}

// accountManagerLine is the line of key in [account_manager], else of
// the table's header (0 when the file has neither).
func (c *Config) accountManagerLine(key string) int {
	if n := lineOfTableKey(c.raw, "account_manager", key); n > 0 {
		return n
	}
	for i, line := range strings.Split(string(c.raw), "\n") {
		if strings.ReplaceAll(strings.TrimSpace(line), " ", "") == "[account_manager]" {
			return i + 1
		}
	}
	return 0
}

// acctMgrHash is guirpc.AcctMgrPasswordHash (config does not import
// guirpc): MD5(password + lowercase(user)), or what follows "hash:".
func acctMgrHash(user, password string) string {
	if h, ok := strings.CutPrefix(password, "hash:"); ok {
		return h
	}
	sum := md5.Sum([]byte(password + strings.ToLower(user)))
	return hex.EncodeToString(sum[:])
}

// accountManagerEnv reads BOINCD_ACCOUNT_MANAGER_URL, _USER,
// _PASSWORD_FILE, _PASSWORD and _AUTHENTICATOR_FILE: a container joins an
// AM from a Secret or a scheduler variable. The environment replaces the
// file's [account_manager] whole when it names a URL.
func (c *Config) accountManagerEnv(getenv func(string) string) {
	u := getenv("BOINCD_ACCOUNT_MANAGER_URL")
	if u == "" {
		return
	}
	c.AccountManager = AccountManager{
		URL:               u,
		User:              getenv("BOINCD_ACCOUNT_MANAGER_USER"),
		PasswordFile:      getenv("BOINCD_ACCOUNT_MANAGER_PASSWORD_FILE"),
		AuthenticatorFile: getenv("BOINCD_ACCOUNT_MANAGER_AUTHENTICATOR_FILE"),
		password:          getenv("BOINCD_ACCOUNT_MANAGER_PASSWORD"),
	}
}
