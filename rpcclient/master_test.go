package rpcclient

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseMasterPage(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []string
	}{
		{"fixture", string(readFixture(t, "client_files/master_127.0.0.1_18080.xml")), []string{"http://127.0.0.1:18080/cgi"}},
		{"none", "<html><body>hello</body></html>", nil},
		{"empty", "", nil},
		{"several on one line, order kept", `<scheduler>http://b/cgi</scheduler><scheduler>http://a/cgi</scheduler><link rel="boinc_scheduler" href="http://b/cgi">`,
			[]string{"http://b/cgi", "http://a/cgi"}},
		{"link before comment", "<link rel=\"boinc_scheduler\" href=\"https://x/cgi\">\n<!-- <scheduler>https://y/cgi</scheduler> -->",
			[]string{"https://x/cgi", "https://y/cgi"}},
		{"link url ends at whitespace", `<link rel="boinc_scheduler" href="http://x/cgi extra">`, []string{"http://x/cgi"}},
		{"other attribute order not matched", `<link href="http://x/cgi" rel="boinc_scheduler">`, nil},
		{"unterminated scheduler", "<scheduler>http://x/cgi", nil},
		{"unterminated link", `<link rel="boinc_scheduler" href="http://x/cgi`, []string{"http://x/cgi"}},
		{"empty values ignored", `<scheduler> </scheduler><link rel="boinc_scheduler" href="">`, nil},
		{"whitespace trimmed", "<scheduler>\n http://x/cgi \n</scheduler>", []string{"http://x/cgi"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := ParseMasterPage([]byte(tc.in)); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func FuzzParseMasterPage(f *testing.F) {
	f.Add(readFixture(f, "client_files/master_127.0.0.1_18080.xml"))
	f.Add([]byte(`<scheduler></scheduler><link rel="boinc_scheduler" href="`))
	f.Fuzz(func(t *testing.T, data []byte) {
		urls := ParseMasterPage(data)
		seen := map[string]bool{}
		for _, u := range urls {
			if strings.TrimSpace(u) == "" || seen[u] {
				t.Fatalf("bad url list %q", urls)
			}
			seen[u] = true
		}
	})
}
