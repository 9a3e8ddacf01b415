package projectlist

import (
	"strings"
	"testing"
	"time"
)

func TestBundledIsAList(t *testing.T) {
	s, err := Check(Bundled)
	if err != nil {
		t.Fatalf("the bundled list: %v", err)
	}
	if s.Projects < 5 || s.AccountManagers < 1 {
		t.Errorf("the bundled list offers %d projects and %d account managers; the Manager's wizards need both", s.Projects, s.AccountManagers)
	}
}

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		name, doc string
		want      Summary
		err       string
	}{
		{name: "projects and a manager", doc: "<projects>\n<project><name>A</name><url>https://a.example/</url></project>\n" +
			"<project><url> http://b.example/b/ </url><platforms><name>x86_64-pc-linux-gnu</name></platforms></project>\n" +
			"<account_manager><name>M</name><url>https://m.example/</url></account_manager>\n<unknown/></projects>",
			want: Summary{Projects: 2, AccountManagers: 1}},
		{name: "html error page", doc: "<html><body>503</body></html>", err: "root element <html>"},
		{name: "empty list", doc: "<projects>\n</projects>", err: "no project and no account manager"},
		{name: "not xml", doc: "Service Unavailable", err: "no <projects> element"},
		{name: "cut off", doc: "<projects><project><url>https://a.example/</url></project>", err: "line 1"},
		{name: "javascript URL", doc: "<projects><project><url>javascript:alert(1)</url></project></projects>", err: "want an http or https URL"},
		{name: "no URL", doc: "<projects><account_manager><name>M</name></account_manager></projects>", err: "want an http or https URL"},
		{name: "too big", doc: "<projects>" + strings.Repeat(" ", MaxBytes) + "</projects>", err: "larger than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Check([]byte(tc.doc))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want one saying %q", err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("Check = %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

func TestDue(t *testing.T) {
	now := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name    string
		checked time.Time
		failed  bool
		want    bool
	}{
		{"never", time.Time{}, false, true},
		{"fetched a day ago", now.Add(-24 * time.Hour), false, false},
		{"fetched 14 days ago", now.Add(-CheckPeriod), false, true},
		{"failed an hour ago", now.Add(-time.Hour), true, false},
		{"failed a day ago", now.Add(-RetryAfter), true, true},
	} {
		if got := Due(now, tc.checked, tc.failed); got != tc.want {
			t.Errorf("%s: Due = %v, want %v", tc.name, got, tc.want)
		}
	}
}
