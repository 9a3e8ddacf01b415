package rpcclient

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const realServerCorpus = "testdata/realserver"

// realServerReplies returns the corpus of replies as real servers write
// them (see testdata/realserver/README.md), for tests and fuzz seeds.
func realServerReplies(tb testing.TB) map[string][]byte {
	tb.Helper()
	names, err := filepath.Glob(filepath.Join(realServerCorpus, "*.xml"))
	if err != nil || len(names) == 0 {
		tb.Fatalf("no corpus in %s: %v", realServerCorpus, err)
	}
	out := map[string][]byte{}
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			tb.Fatal(err)
		}
		out[filepath.Base(n)] = b
	}
	return out
}

func TestRealServerReplies(t *testing.T) {
	const feed = "http://127.0.0.1:33080/rstest/notices.php?userid=3&auth=3_03f8084e4253dddf5dca153ed2fd0d05"
	cases := []struct {
		file     string
		hostID   int64
		results  int
		acks     int
		messages []string
		guiURLs  []string // "name|description|url" of each web link
		fast     bool     // the fast tokenizer reads it without falling back
	}{
		{file: "first_contact_with_work.xml", hostID: 3, results: 1, guiURLs: []string{
			"Message boards|Correspond with other users on the Real-server harness rstest message boards|http://127.0.0.1:33080/rstest/forum_index.php",
			"Your account|View your account information|http://127.0.0.1:33080/rstest/home.php",
			"Your tasks|View the last week or so of computational work|http://127.0.0.1:33080/rstest/results.php?userid=3",
		}, fast: true},
		{file: "first_contact_no_work.xml", hostID: 3, messages: []string{"Project has no tasks available"}, fast: true},
		{file: "work_fetch_13_jobs.xml", results: 13, acks: 2, fast: true},
		{file: "report_acks_no_work.xml", acks: 2, messages: []string{"Project has no tasks available"}, fast: true},
		{file: "sloppy_names_in_gui_urls.xml", hostID: 3, results: 1,
			guiURLs: []string{
				`Team|Info about R&D <Lab> "the best"|http://127.0.0.1:33080/rstest/team_display.php?teamid=7`,
				"Your account|Account of Tom & Jerry <3|http://127.0.0.1:33080/rstest/home.php?name=Tom & Jerry <3",
			}},
		{file: "sloppy_messages.xml", hostID: 3, results: 1, messages: []string{
			`Your client is old.<br>See <a href="http://127.0.0.1:33080/rstest/download.php?os=linux&v=7">the download page</a>`,
			"No tasks for CPU & GPU: 50% of the quota used",
			`deadline < runtime estimate for app "rsapp" (R&D)`,
			"a < b",
		}},
		{file: "sloppy_header_crlf_unknown.xml", hostID: 3, results: 1},
		{file: "sloppy_project_files.xml", hostID: 3, results: 1},
	}
	corpus := realServerReplies(t)
	if len(corpus) != len(cases) {
		t.Errorf("corpus has %d files, table %d: keep them in step", len(corpus), len(cases))
	}
	for _, tc := range cases {
		t.Run(tc.file, func(t *testing.T) {
			data := corpus[tc.file]
			r, err := ParseSchedulerReply(data)
			if err != nil {
				t.Fatal(err)
			}
			if r.HostID != tc.hostID || len(r.Results) != tc.results || len(r.ResultAcks) != tc.acks {
				t.Errorf("hostid %d results %d acks %d, want %d %d %d", r.HostID, len(r.Results), len(r.ResultAcks), tc.hostID, tc.results, tc.acks)
			}
			if r.RequestDelay != 7 || r.ProjectName != "Real-server harness rstest" {
				t.Errorf("request_delay %v project %q", r.RequestDelay, r.ProjectName)
			}
			if len(r.Workunits) != tc.results || len(r.AppVersions) == 0 && tc.results > 0 {
				t.Errorf("%d workunits, %d app versions", len(r.Workunits), len(r.AppVersions))
			}
			var got []string
			for _, m := range r.Messages {
				got = append(got, m.Text)
			}
			if strings.Join(got, "\n") != strings.Join(tc.messages, "\n") {
				t.Errorf("messages\n%q\nwant\n%q", got, tc.messages)
			}
			if tc.guiURLs != nil {
				var links []string
				for _, u := range r.GUIURLs {
					links = append(links, u.Name+"|"+u.Description+"|"+u.URL)
				}
				if strings.Join(links, "\n") != strings.Join(tc.guiURLs, "\n") {
					t.Errorf("web links\n%s\nwant\n%s", strings.Join(links, "\n"), strings.Join(tc.guiURLs, "\n"))
				}
			}
			if !r.HasGUIURLs {
				t.Errorf("no <gui_urls> seen")
			}
			if strings.Contains(string(data), "rss_feeds") && strings.HasPrefix(tc.file, "first_contact") && !strings.Contains(string(data), feed) {
				t.Errorf("capture lost its stock feed URL")
			}
			if tc.fast {
				if _, err := parseFast(data[findStartTag(data):]); err != nil {
					t.Errorf("fast tokenizer fell back on a stock reply: %v", err)
				}
			}
		})
	}
}

// The bare '&' is text wherever it appears, and a real entity next to it
// still decodes: both parsers agree.
func TestBareAmpersand(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"a&auth=1", "a&auth=1"},
		{"a&auth", "a&auth"},
		{"x&amp;y&z", "x&y&z"},
		{"&lt;&b.c-d_e:f=1", "<&b.c-d_e:f=1"},
		{"1 & 2", "1 & 2"},
		{"&nbsp", "&nbsp"},
		{"&unknown;", "&unknown;"},
		{"&#65;&#x42;&c", "AB&c"},
	} {
		src := []byte("<scheduler_reply><project_name>" + tc.in + "</project_name></scheduler_reply>")
		r, err := ParseSchedulerReply(src)
		if err != nil {
			t.Errorf("%q: %v", tc.in, err)
			continue
		}
		if r.ProjectName != tc.want {
			t.Errorf("%q: got %q, want %q", tc.in, r.ProjectName, tc.want)
		}
		if std, err := parseStd(src); err != nil {
			t.Errorf("%q: encoding/xml path: %v", tc.in, err)
		} else if std.ProjectName != tc.want {
			t.Errorf("%q: encoding/xml path %q, want %q", tc.in, std.ProjectName, tc.want)
		}
	}
}

func TestParseGUIURLs(t *testing.T) {
	body := `<gui_url><name>a &amp; b</name><description>x &#65;&#x42; &nbsp; &c</description><url>https://x/?a=1&amp;b=2</url></gui_url>
<gui_url><name>evil</name><url>javascript:alert(1)</url></gui_url>
<gui_url><name>file</name><url> file:///etc/passwd </url></gui_url>
<gui_url><description>no name</description><url>http://x/</url></gui_url>
<gui_url><name>unterminated</name><url>http://x/`
	got := parseGUIURLs(body)
	if len(got) != 1 || got[0].Name != "a & b" || got[0].Description != "x AB &nbsp; &c" || got[0].URL != "https://x/?a=1&b=2" {
		t.Errorf("got %+v", got)
	}
}
