package importer

import (
	"reflect"
	"testing"
)

// TestParseFileGzipped: a C++ state file's <download_gzipped/> file lists
// its .gz URLs as <download_url> (FILE_INFO::parse replaced the plain
// ones; FILE_INFO::write wrote them back), so the import takes them as
// the gzipped URLs, with <gzipped_nbytes>; a plain file keeps its URLs.
func TestParseFileGzipped(t *testing.T) {
	tests := []struct {
		name              string
		xml               string
		wantPlain, wantGz []string
		wantGzBytes       float64
	}{
		{"download_gzipped", `<file><name>in</name><nbytes>54321</nbytes><status>0</status>
<download_gzipped/><gzipped_nbytes>3900</gzipped_nbytes>
<download_url>http://a/in.gz</download_url><download_url>http://b/in.gz</download_url></file>`,
			nil, []string{"http://a/in.gz", "http://b/in.gz"}, 3900},
		{"gzipped_url element", `<file_info><name>in</name><url>http://a/in</url><gzipped_url>http://a/in.gz</gzipped_url>
<gzipped_nbytes>10</gzipped_nbytes></file_info>`, []string{"http://a/in"}, []string{"http://a/in.gz"}, 10},
		{"plain", `<file><name>in</name><download_url>http://a/in</download_url><gzipped_nbytes>7</gzipped_nbytes></file>`,
			[]string{"http://a/in"}, nil, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n, err := parseXML("client_state.xml", []byte(tc.xml))
			if err != nil {
				t.Fatal(err)
			}
			cf, err := parseFile("client_state.xml", n)
			if err != nil {
				t.Fatal(err)
			}
			f := cf.f
			if !reflect.DeepEqual(f.DownloadURLs, tc.wantPlain) || !reflect.DeepEqual(f.GzippedURLs, tc.wantGz) || f.GzippedNBytes != tc.wantGzBytes {
				t.Errorf("plain %q gz %q gzipped_nbytes %g, want %q %q %g", f.DownloadURLs, f.GzippedURLs, f.GzippedNBytes,
					tc.wantPlain, tc.wantGz, tc.wantGzBytes)
			}
		})
	}
}
