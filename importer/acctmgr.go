package importer

import (
	"encoding/xml"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/boincd/boincd/boinc"
	"github.com/boincd/boincd/daemon"
)

// The account manager membership: 7.20 keeps it all in acct_mgr_url.xml
// (ACCT_MGR_INFO::write_info); older clients put the login, opaque and
// next RPC time in acct_mgr_login.xml, which 7.20 still reads. Both are
// read; the URL file wins where both speak.

const (
	acctMgrURLFile   = "acct_mgr_url.xml"
	acctMgrLoginFile = "acct_mgr_login.xml"
)

type acctMgrXML struct {
	Name             string    `xml:"name"`
	URL              string    `xml:"url"`
	SigningKey       string    `xml:"signing_key"`
	SendGUIRPCInfo   *struct{} `xml:"send_gui_rpc_info"`
	Authenticator    string    `xml:"authenticator"`
	Login            string    `xml:"login"`
	PasswordHash     string    `xml:"password_hash"`
	PreviousHostCPID string    `xml:"previous_host_cpid"`
	NextRPCTime      string    `xml:"next_rpc_time"`
	Opaque           *struct {
		Inner string `xml:",innerxml"`
	} `xml:"opaque"`
	NoProjectNotices string `xml:"no_project_notices"`
	Dynamic          string `xml:"dynamic"`
	UserName         string `xml:"user_name"`
	TeamName         string `xml:"team_name"`
}

// readAcctMgr reads the membership; nil when the client was in no AM.
func readAcctMgr(dir string) (*daemon.ImportedAcctMgr, error) {
	var files [2]acctMgrXML
	for i, name := range []string{acctMgrURLFile, acctMgrLoginFile} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if err := xml.Unmarshal(b, &files[i]); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
	}
	u, l := files[0], files[1]
	if strings.TrimSpace(u.URL) == "" {
		return nil, nil
	}
	url, err := boinc.CanonicalMasterURL(strings.TrimSpace(u.URL))
	if err != nil {
		return nil, fmt.Errorf("%s: account manager URL: %w", acctMgrURLFile, err)
	}
	pick := func(a, b string) string {
		if a = strings.TrimSpace(a); a != "" {
			return a
		}
		return strings.TrimSpace(b)
	}
	am := &daemon.ImportedAcctMgr{
		URL: url, Name: strings.TrimSpace(u.Name), SendGUIRPCInfo: u.SendGUIRPCInfo != nil,
		Authenticator:    pick(u.Authenticator, l.Authenticator),
		LoginName:        pick(u.Login, l.Login),
		PasswordHash:     pick(u.PasswordHash, l.PasswordHash),
		PreviousHostCPID: pick(u.PreviousHostCPID, l.PreviousHostCPID),
		UserName:         pick(u.UserName, l.UserName),
		TeamName:         pick(u.TeamName, l.TeamName),
		NoProjectNotices: pick(u.NoProjectNotices, l.NoProjectNotices) == "1",
		Dynamic:          pick(u.Dynamic, l.Dynamic) == "1",
	}
	if key := strings.TrimSpace(u.SigningKey); key != "" {
		am.SigningKey = key + "\n"
	}
	for _, o := range []*struct {
		Inner string `xml:",innerxml"`
	}{u.Opaque, l.Opaque} {
		if o != nil && strings.TrimSpace(o.Inner) != "" {
			am.Opaque = strings.TrimSpace(o.Inner)
			break
		}
	}
	if s := pick(u.NextRPCTime, l.NextRPCTime); s != "" {
		if f, err := strconv.ParseFloat(s, 64); err == nil && f > 0 && !math.IsInf(f, 0) {
			am.NextRPCTime = time.Unix(0, int64(f*1e9))
		}
	}
	if am.SigningKey == "" {
		return nil, fmt.Errorf("%s: the account manager %s has no signing key: join it again with boinccmd --acct_mgr attach", acctMgrURLFile, url)
	}
	return am, nil
}

// noteAcctMgr says in the summary that the membership comes along.
func (im *importer) noteAcctMgr() {
	if im.am == nil {
		return
	}
	name := im.am.Name
	if name == "" {
		name = im.am.URL
	}
	im.sum.Carried = append(im.sum.Carried, fmt.Sprintf("account manager %s (%s): the host stays in it (%s)", name, im.am.URL, acctMgrURLFile))
}
