package winsvc

import (
	"crypto/sha1"
	"encoding/binary"
	"fmt"
	"strings"
	"unicode/utf16"
)

// AccountKind is the sort of account a service runs under.
type AccountKind int

// Account kinds.
const (
	// Virtual is NT SERVICE\boincd: an account Windows makes for the
	// service alone, with no password and few rights. The default.
	Virtual AccountKind = iota
	LocalSystem
	LocalService
	NetworkService
	// User is a real (local or domain) account, given with a password.
	User
)

func (k AccountKind) String() string {
	switch k {
	case Virtual:
		return "virtual account"
	case LocalSystem:
		return "LocalSystem"
	case LocalService:
		return "LocalService"
	case NetworkService:
		return "NetworkService"
	case User:
		return "user account"
	}
	return fmt.Sprintf("account kind %d", int(k))
}

// Account is the account the service runs under, as the SCM wants it.
type Account struct {
	Kind AccountKind
	// StartName is mgr.Config.ServiceStartName: ".\name" for a local
	// user, DOMAIN\name or name@domain for a domain one, the NT AUTHORITY
	// names for the built-in accounts.
	StartName string
	// NeedsPassword: only User accounts have one; the SCM rejects a
	// password for the others.
	NeedsPassword bool
}

// ParseAccount turns the --user value of "boincd service install" into an
// Account for service name. Empty means the virtual account NT
// SERVICE\<name>. A bare user name means the local account (.\name).
func ParseAccount(user, name string) (Account, error) {
	u := strings.TrimSpace(user)
	switch strings.ToLower(u) {
	case "":
		return Account{Kind: Virtual, StartName: `NT SERVICE\` + name}, nil
	case "localsystem", `.\localsystem`, "system", `nt authority\system`:
		return Account{Kind: LocalSystem, StartName: "LocalSystem"}, nil
	case "localservice", `nt authority\localservice`, `nt authority\local service`:
		return Account{Kind: LocalService, StartName: `NT AUTHORITY\LocalService`}, nil
	case "networkservice", `nt authority\networkservice`, `nt authority\network service`:
		return Account{Kind: NetworkService, StartName: `NT AUTHORITY\NetworkService`}, nil
	}
	domain, acct, hasDomain := strings.Cut(u, `\`)
	if !hasDomain {
		domain, acct = "", u
	}
	if strings.EqualFold(domain, "NT SERVICE") {
		// A virtual account only exists for its own service.
		if !strings.EqualFold(acct, name) {
			return Account{}, fmt.Errorf("service account %q: a virtual account must be NT SERVICE\\%s", user, name)
		}
		return Account{Kind: Virtual, StartName: `NT SERVICE\` + name}, nil
	}
	if strings.EqualFold(domain, "NT AUTHORITY") {
		return Account{}, fmt.Errorf("service account %q: only SYSTEM, LocalService and NetworkService are known NT AUTHORITY accounts", user)
	}
	if err := checkAccountName(acct, !hasDomain); err != nil {
		return Account{}, fmt.Errorf("service account %q: %w", user, err)
	}
	if hasDomain {
		if err := checkAccountName(domain, false); err != nil && domain != "." {
			return Account{}, fmt.Errorf("service account %q: domain: %w", user, err)
		}
		return Account{Kind: User, StartName: domain + `\` + acct, NeedsPassword: true}, nil
	}
	if strings.Contains(acct, "@") {
		return Account{Kind: User, StartName: acct, NeedsPassword: true}, nil // user@domain (UPN)
	}
	return Account{Kind: User, StartName: `.\` + acct, NeedsPassword: true}, nil
}

// checkAccountName rejects what Windows never allows in an account or
// domain name (and what would confuse the SCM's DOMAIN\name parsing).
func checkAccountName(s string, allowAt bool) error {
	if s == "" {
		return fmt.Errorf("empty name")
	}
	if strings.Trim(s, ". ") == "" {
		return fmt.Errorf("name %q is only dots and spaces", s)
	}
	for _, r := range s {
		if r < ' ' || r == 0x7f {
			return fmt.Errorf("control character in %q", s)
		}
		if r == '@' && !allowAt {
			return fmt.Errorf("%q: @ is only allowed in user@domain", s)
		}
		if strings.ContainsRune(`"/\[]:;|=,+*?<>`, r) {
			return fmt.Errorf("%q contains %q, which Windows does not allow in account names", s, r)
		}
	}
	return nil
}

// ServiceSID is the SID Windows gives service name (NT SERVICE\name, what
// "sc showsid name" prints): S-1-5-80 followed by the SHA-1 of the
// upper-cased name in UTF-16LE, read as five little-endian 32-bit words.
// Computing it lets Install put the service in the data directory's ACL
// without looking the name up, which works whether or not the service
// exists yet.
func ServiceSID(name string) string {
	u := utf16.Encode([]rune(strings.ToUpper(name)))
	b := make([]byte, 2*len(u))
	for i, c := range u {
		binary.LittleEndian.PutUint16(b[2*i:], c)
	}
	sum := sha1.Sum(b)
	var sb strings.Builder
	sb.WriteString("S-1-5-80")
	for i := 0; i < 5; i++ {
		fmt.Fprintf(&sb, "-%d", binary.LittleEndian.Uint32(sum[4*i:]))
	}
	return sb.String()
}

// DataDirSDDL is the security descriptor Install gives the data
// directory: a protected DACL (nothing inherited from ProgramData, whose
// ACL lets every local user read new files) granting full control, for
// the directory and everything below it, to SYSTEM, Administrators and
// each of sids (the service's SID, and the --user account's). The
// directory holds account keys (authenticators) and the GUI RPC password,
// which other local users must not read.
func DataDirSDDL(sids ...string) (string, error) {
	var b strings.Builder
	b.WriteString("D:P(A;OICI;FA;;;SY)(A;OICI;FA;;;BA)")
	for _, sid := range sids {
		if !validSID(sid) {
			return "", fmt.Errorf("data directory ACL: %q is not a SID", sid)
		}
		fmt.Fprintf(&b, "(A;OICI;FA;;;%s)", sid)
	}
	return b.String(), nil
}

// validSID accepts the S-1-<authority>-<sub>... string form only, so a
// SID can never inject SDDL.
func validSID(s string) bool {
	parts := strings.Split(s, "-")
	if len(parts) < 3 || parts[0] != "S" || parts[1] != "1" {
		return false
	}
	for _, p := range parts[2:] {
		if p == "" || len(p) > 20 {
			return false
		}
		for _, c := range p {
			if c < '0' || c > '9' {
				return false
			}
		}
	}
	return true
}

// LookupName is the name to give LookupAccountName for a User account's
// StartName: the SCM understands ".\name" as the local machine's account,
// LookupAccountName does not, so "." becomes the computer's name.
func (a Account) LookupName(computer string) string {
	if rest, ok := strings.CutPrefix(a.StartName, `.\`); ok && computer != "" {
		return computer + `\` + rest
	}
	return a.StartName
}
