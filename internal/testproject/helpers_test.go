package testproject

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fixtureDir holds the BOINC 7.20 captures (testdata/ at the module root).
const fixtureDir = "../../testdata/boinc-7.20"

func fixture(t *testing.T, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(fixtureDir, rel))
	if err != nil {
		t.Fatalf("fixture %s: %v", rel, err)
	}
	return b
}

// startServer starts a server on 127.0.0.1 and closes it at cleanup.
func startServer(t *testing.T, cfg Config) *Server {
	t.Helper()
	if len(cfg.Apps) == 0 {
		cfg.Apps = []App{DefaultApp()}
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if err := s.Start(); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

var testClient = &http.Client{Timeout: 30 * time.Second}

func post(t *testing.T, url string, body []byte) (int, []byte) {
	t.Helper()
	// The real client sends this content type (http_requests_log.txt).
	resp, err := testClient.Post(url, "application/x-www-form-urlencoded", bytes.NewReader(body))
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("POST %s: reading reply: %v", url, err)
	}
	return resp.StatusCode, b
}

func rpc(t *testing.T, s *Server, body []byte) []byte {
	t.Helper()
	code, b := post(t, s.URL()+"cgi", body)
	if code != http.StatusOK {
		t.Fatalf("scheduler RPC: HTTP %d: %s", code, b)
	}
	return b
}

// reqOpts parameterises a scheduler request shaped like the fixtures.
type reqOpts struct {
	auth        string
	hostID      int64
	reqSecs     float64
	reqInst     float64 // cpu_req_instances
	cudaSecs    float64 // <coproc_cuda><req_secs>; with cudaInst, written only when either is set
	cudaInst    float64 // <coproc_cuda><req_instances>
	dontSend    bool
	codeSignKey string
	reports     []reportOpts
	other       []string
	platform    string // <platform_name>; default x86_64-pc-linux-gnu
	appVersions string // the body of <app_versions>
}

type reportOpts struct {
	name       string
	exitStatus int
	state      int
	stderr     string
	outputs    map[string]string // name → md5
}

func makeRequest(o reqOpts) []byte {
	if o.auth == "" {
		o.auth = "0123456789abcdef0123456789abcdef"
	}
	var b strings.Builder
	b.WriteString("<scheduler_request>\n")
	fmt.Fprintf(&b, "    <authenticator>%s</authenticator>\n", o.auth)
	fmt.Fprintf(&b, "    <hostid>%d</hostid>\n    <rpc_seqno>0</rpc_seqno>\n", o.hostID)
	b.WriteString("    <core_client_major_version>7</core_client_major_version>\n    <core_client_minor_version>20</core_client_minor_version>\n    <core_client_release>5</core_client_release>\n")
	dont := 0
	if o.dontSend {
		dont = 1
	}
	fmt.Fprintf(&b, "    <dont_send_work>%d</dont_send_work>\n", dont)
	fmt.Fprintf(&b, "    <work_req_seconds>%f</work_req_seconds>\n    <cpu_req_secs>%f</cpu_req_secs>\n    <cpu_req_instances>%f</cpu_req_instances>\n", o.reqSecs, o.reqSecs, o.reqInst)
	if o.platform == "" {
		o.platform = "x86_64-pc-linux-gnu"
	}
	fmt.Fprintf(&b, "    <platform_name>%s</platform_name>\n", o.platform)
	if o.cudaSecs != 0 || o.cudaInst != 0 {
		// The shape the daemon writes (coproc.WriteCoprocCUDA), abridged.
		fmt.Fprintf(&b, "<coprocs>\n<coproc_cuda>\n   <count>1</count>\n   <name>NVIDIA A100</name>\n   <have_cuda>1</have_cuda>\n   <req_secs>%f</req_secs>\n   <req_instances>%f</req_instances>\n   <estimated_delay>0.000000</estimated_delay>\n</coproc_cuda>\n</coprocs>\n", o.cudaSecs, o.cudaInst)
	}
	if o.codeSignKey != "" {
		fmt.Fprintf(&b, "    <code_sign_key>\n%s</code_sign_key>\n", o.codeSignKey)
	}
	for _, r := range o.reports {
		fmt.Fprintf(&b, "<result>\n    <name>%s</name>\n    <final_cpu_time>0.5</final_cpu_time>\n    <final_elapsed_time>1.5</final_elapsed_time>\n    <exit_status>%d</exit_status>\n    <state>%d</state>\n", r.name, r.exitStatus, r.state)
		fmt.Fprintf(&b, "<stderr_out>\n<core_client_version>7.20.5</core_client_version>\n<![CDATA[\n<stderr_txt>\n%s\n</stderr_txt>\n]]>\n</stderr_out>\n", r.stderr)
		for n, m := range r.outputs {
			fmt.Fprintf(&b, "<file_info>\n    <name>%s</name>\n    <nbytes>1.0</nbytes>\n    <md5_cksum>%s</md5_cksum>\n</file_info>\n", n, m)
		}
		b.WriteString("</result>\n")
	}
	b.WriteString("<app_versions>\n" + o.appVersions + "</app_versions>\n<other_results>\n")
	for _, n := range o.other {
		fmt.Fprintf(&b, "    <other_result>\n        <name>%s</name>\n        <app_version>0</app_version>\n    </other_result>\n", n)
	}
	b.WriteString("</other_results>\n</scheduler_request>\n")
	return []byte(b.String())
}

// parsedReply is the part of a reply the tests look at.
type parsedReply struct {
	XMLName      xml.Name `xml:"scheduler_reply"`
	HostID       int64    `xml:"hostid"`
	RequestDelay float64  `xml:"request_delay"`
	MasterURL    string   `xml:"master_url"`
	ProjectName  string   `xml:"project_name"`
	CodeSignKey  string   `xml:"code_sign_key"`
	Messages     []string `xml:"message"`
	FileInfos    []struct {
		Name          string `xml:"name"`
		URL           string `xml:"url"`
		GzippedURL    string `xml:"gzipped_url"`
		GzippedNBytes int64  `xml:"gzipped_nbytes"`
		NBytes        int64  `xml:"nbytes"`
		MD5           string `xml:"md5_cksum"`
		MaxNBytes     string `xml:"max_nbytes"`
		FileSignature string `xml:"file_signature"`
		XMLSignature  string `xml:"xml_signature"`
	} `xml:"file_info"`
	Workunits []struct {
		Name        string `xml:"name"`
		CommandLine string `xml:"command_line"`
		FileRefs    []struct {
			FileName string `xml:"file_name"`
			OpenName string `xml:"open_name"`
		} `xml:"file_ref"`
	} `xml:"workunit"`
	Results []struct {
		Name     string `xml:"name"`
		FileRefs []struct {
			FileName string `xml:"file_name"`
		} `xml:"file_ref"`
	} `xml:"result"`
	Acks []struct {
		Name string `xml:"name"`
	} `xml:"result_ack"`
}

func parseReply(t *testing.T, b []byte) parsedReply {
	t.Helper()
	var r parsedReply
	if err := xml.Unmarshal(b, &r); err != nil {
		t.Fatalf("reply does not parse: %v\n%s", err, b)
	}
	return r
}

func (r parsedReply) fileInfo(name string) (int, bool) {
	for i, f := range r.FileInfos {
		if f.Name == name {
			return i, true
		}
	}
	return -1, false
}

// elementPaths lists every element of an XML document as a slash path, in
// document order.
func elementPaths(t *testing.T, b []byte, maxDepth int) []string {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(b))
	var stack, out []string
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("xml: %v", err)
		}
		switch e := tok.(type) {
		case xml.StartElement:
			stack = append(stack, e.Name.Local)
			if len(stack) > 1 && len(stack) <= maxDepth+1 {
				out = append(out, strings.Join(stack[1:], "/"))
			}
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		}
	}
}

// uploadBody builds a file_upload_handler request like the client's.
func uploadBody(name, sig string, maxNBytes int, nbytes int, md5 string, offset int, data []byte) []byte {
	var b bytes.Buffer
	b.WriteString("<data_server_request>\n    <core_client_major_version>7</core_client_major_version>\n    <core_client_minor_version>20</core_client_minor_version>\n    <core_client_release>5</core_client_release>\n<file_upload>\n<file_info>\n")
	fmt.Fprintf(&b, "<name>%s</name>\n", name)
	if sig != "" {
		fmt.Fprintf(&b, "<xml_signature>\n%s</xml_signature>\n", strings.TrimSpace(sig))
	}
	fmt.Fprintf(&b, "<max_nbytes>%d</max_nbytes>\n</file_info>\n<nbytes>%d</nbytes>\n<md5_cksum>%s</md5_cksum>\n<offset>%d</offset>\n<data>\n", maxNBytes, nbytes, md5, offset)
	b.Write(data)
	return b.Bytes()
}

type uploadReply struct {
	Status   int    `xml:"status"`
	Message  string `xml:"message"`
	FileSize *int64 `xml:"file_size"`
}

func upload(t *testing.T, s *Server, body []byte) uploadReply {
	t.Helper()
	code, b := post(t, s.URL()+"cgi-bin/file_upload_handler", body)
	if code != http.StatusOK {
		t.Fatalf("upload: HTTP %d: %s", code, b)
	}
	var r uploadReply
	if err := xml.Unmarshal(b, &r); err != nil {
		t.Fatalf("upload reply %q: %v", b, err)
	}
	return r
}
