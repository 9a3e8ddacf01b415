// Package projectlist keeps BOINC's list of projects and account managers
// (all_projects_list.xml), which BOINC Manager's Add Project and account
// manager wizards show, the way the C++ client keeps it
// (CLIENT_STATE::all_projects_list_check, GET_PROJECT_LIST_OP): fetched
// from BOINC's web site when missing or CheckPeriod old, retried a day
// after a failure, never while cc_config.xml says no_info_fetch or
// dont_contact_ref_site. Until a fetch succeeds, and on hosts that never
// reach the internet, the copy bundled in the binary serves: an empty
// list crashes BOINC Manager 7.20's account manager wizard and leaves its
// Add Project wizard with nothing to choose.
package projectlist

import (
	"bytes"
	_ "embed"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"
)

const (
	// DefaultURL is where the C++ client fetches the list
	// (GET_PROJECT_LIST_OP::do_rpc).
	DefaultURL = "https://boinc.berkeley.edu/project_list.php"
	// CheckPeriod is ALL_PROJECTS_LIST_CHECK_PERIOD: the list is fetched
	// again when older.
	CheckPeriod = 14 * 24 * time.Hour
	// RetryAfter is how long after a failed fetch the next try comes
	// (GET_PROJECT_LIST_OP::handle_reply: "if error, try again in a day").
	RetryAfter = 24 * time.Hour
	// MaxBytes bounds a fetched list (BOINC's is about 100 KB).
	MaxBytes = 8 << 20
)

// Bundled is the list served until a fetched one is on disk: a few
// long-running projects and the two public account managers, written for
// boincd (names, master URLs and what they do, as the projects describe
// themselves).
//
//go:embed bundled.xml
var Bundled []byte

// Summary counts what a list offers.
type Summary struct {
	Projects, AccountManagers int
}

// Check parses a list and says what it offers. It must be a <projects>
// document with at least one project or account manager, each with an
// http(s) URL; other elements are ignored (the C++ client checks only
// for "</projects>"; a page of HTML from a captive portal or an error
// page must not replace a good list).
func Check(b []byte) (Summary, error) {
	var s Summary
	if len(b) > MaxBytes {
		return s, fmt.Errorf("larger than %d bytes", MaxBytes)
	}
	dec := xml.NewDecoder(bytes.NewReader(b))
	depth := 0
	var entry, field string
	var entryURL strings.Builder
	rooted := false
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return s, fmt.Errorf("line %d: %w", lineAt(b, dec.InputOffset()), err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			depth++
			switch depth {
			case 1:
				if t.Name.Local != "projects" {
					return s, fmt.Errorf("root element <%s>, want <projects>", t.Name.Local)
				}
				rooted = true
			case 2:
				entry = t.Name.Local
				entryURL.Reset()
			case 3:
				field = t.Name.Local
			}
		case xml.CharData:
			if depth == 3 && field == "url" {
				entryURL.Write(t)
			}
		case xml.EndElement:
			if depth == 2 && (entry == "project" || entry == "account_manager") {
				u := strings.TrimSpace(entryURL.String())
				if p, err := url.Parse(u); err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
					return s, fmt.Errorf("line %d: <%s> with URL %q: want an http or https URL", lineAt(b, dec.InputOffset()), entry, u)
				}
				if entry == "project" {
					s.Projects++
				} else {
					s.AccountManagers++
				}
			}
			if depth == 3 {
				field = ""
			}
			depth--
		}
	}
	if !rooted {
		return s, errors.New("no <projects> element")
	}
	if s.Projects+s.AccountManagers == 0 {
		return s, errors.New("no project and no account manager in it")
	}
	return s, nil
}

func lineAt(b []byte, off int64) int {
	if off > int64(len(b)) {
		off = int64(len(b))
	}
	return bytes.Count(b[:off], []byte("\n")) + 1
}

// Due says whether the list should be fetched at now, given when it was
// last checked (zero: never, or the file is missing) and whether the
// last fetch failed (CLIENT_STATE::all_projects_list_check).
func Due(now, checked time.Time, failed bool) bool {
	if checked.IsZero() {
		return true
	}
	wait := CheckPeriod
	if failed {
		wait = RetryAfter
	}
	return !now.Before(checked.Add(wait))
}
