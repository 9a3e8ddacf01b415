package testproject

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

func TestFixtureUploadReplay(t *testing.T) {
	body := fixture(t, "upload/upload_request_file_upload.bin")
	wantReply := fixture(t, "upload/upload_reply_ok.xml")
	t.Run("accepted when unknown uploads are allowed", func(t *testing.T) {
		s := startServer(t, Config{AcceptUnknownUploads: true})
		code, got := post(t, s.URL()+"cgi-bin/file_upload_handler", body)
		if code != http.StatusOK || !bytes.Equal(got, wantReply) {
			t.Fatalf("HTTP %d reply %q, want %q", code, got, wantReply)
		}
		data := s.Stats().Uploaded["refwu_1795268541_1_0_r7919_0"]
		if len(data) != 86 || md5Hex(data) != "b351e64117fecd13f028009656b05c18" {
			t.Errorf("stored %d bytes md5 %s", len(data), md5Hex(data))
		}
		// Uploading it again is harmless.
		if _, got := post(t, s.URL()+"cgi-bin/file_upload_handler", body); !bytes.Equal(got, wantReply) {
			t.Errorf("repeat upload reply %q", got)
		}
	})
	t.Run("refused by default", func(t *testing.T) {
		s := startServer(t, Config{})
		if u := upload(t, s, body); u.Status != -1 {
			t.Errorf("status %d, want -1", u.Status)
		}
	})
}

// jobForUpload fetches one job and returns its output name and signature.
func jobForUpload(t *testing.T, s *Server) (name, sig string) {
	t.Helper()
	r := parseReply(t, rpc(t, s, makeRequest(reqOpts{reqSecs: 1})))
	if len(r.Results) != 1 {
		t.Fatalf("no job")
	}
	name = r.Results[0].FileRefs[0].FileName
	i, ok := r.fileInfo(name)
	if !ok {
		t.Fatalf("no file_info for output %s", name)
	}
	return name, r.FileInfos[i].XMLSignature
}

func TestUploadHandler(t *testing.T) {
	data := bytes.Repeat([]byte("0123456789abcdef"), 1000) // 16000 bytes
	sum := md5Hex(data)
	type step struct {
		body       func(name, sig string) []byte
		wantStatus int
		wantSize   int64 // for size queries; -1 = no file_size
	}
	sizeQuery := func(name, _ string) []byte {
		return []byte(fmt.Sprintf("<data_server_request>\n    <core_client_major_version>7</core_client_major_version>\n    <core_client_minor_version>20</core_client_minor_version>\n    <core_client_release>5</core_client_release>\n    <get_file_size>%s</get_file_size>\n</data_server_request>\n", name))
	}
	tests := []struct {
		name         string
		maxOut       float64
		steps        []step
		wantUploaded bool
	}{
		{"whole file", 1e6, []step{
			{func(n, s string) []byte { return uploadBody(n, s, 1000000, len(data), sum, 0, data) }, 0, -1},
		}, true},
		{"partial then resume", 1e6, []step{
			{sizeQuery, 0, 0},
			{func(n, s string) []byte { return uploadBody(n, s, 1000000, len(data), sum, 0, data[:9000]) }, 1, -1},
			{sizeQuery, 0, 9000},
			{func(n, s string) []byte { return uploadBody(n, s, 1000000, len(data), sum, 9000, data[9000:]) }, 0, -1},
			{sizeQuery, 0, int64(len(data))},
		}, true},
		{"resume beyond what the server has", 1e6, []step{
			{func(n, s string) []byte { return uploadBody(n, s, 1000000, len(data), sum, 100, data[100:]) }, 1, -1},
		}, false},
		{"oversized", 1000, []step{
			{func(n, s string) []byte { return uploadBody(n, s, 1000, len(data), sum, 0, data) }, -1, -1},
		}, false},
		{"md5 mismatch", 1e6, []step{
			{func(n, s string) []byte {
				return uploadBody(n, s, 1000000, len(data), strings.Repeat("0", 32), 0, data)
			}, -1, -1},
		}, false},
		{"bad signature", 1e6, []step{
			{func(n, s string) []byte { return uploadBody(n, "", 1000000, len(data), sum, 0, data) }, -1, -1},
		}, false},
		{"claims a larger max_nbytes than signed", 1000, []step{
			{func(n, s string) []byte { return uploadBody(n, s, 1000000, len(data), sum, 0, data) }, -1, -1},
		}, false},
		{"hostile name", 1e6, []step{
			{func(_, s string) []byte { return uploadBody("../evil", s, 1000000, len(data), sum, 0, data) }, -1, -1},
		}, false},
		{"no data tag", 1e6, []step{
			{func(n, s string) []byte {
				b := uploadBody(n, s, 1000000, len(data), sum, 0, nil)
				return bytes.TrimSuffix(b, []byte("<data>\n"))
			}, -1, -1},
		}, false},
		{"garbage", 1e6, []step{{func(_, _ string) []byte { return []byte("garbage") }, -1, -1}}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := startServer(t, Config{Job: JobTemplate{MaxOutputBytes: tc.maxOut}})
			name, sig := jobForUpload(t, s)
			for i, st := range tc.steps {
				u := upload(t, s, st.body(name, sig))
				if u.Status != st.wantStatus {
					t.Fatalf("step %d: status %d (%s), want %d", i, u.Status, u.Message, st.wantStatus)
				}
				if st.wantSize >= 0 && (u.FileSize == nil || *u.FileSize != st.wantSize) {
					t.Fatalf("step %d: file_size %v, want %d", i, u.FileSize, st.wantSize)
				}
			}
			got, ok := s.Stats().Uploaded[name]
			if ok != tc.wantUploaded || (ok && !bytes.Equal(got, data)) {
				t.Errorf("uploaded %v (%d bytes), want %v", ok, len(got), tc.wantUploaded)
			}
		})
	}
}

func TestUploadFaults(t *testing.T) {
	s := startServer(t, Config{Faults: Faults{UploadFailures: 2}})
	name, sig := jobForUpload(t, s)
	data := []byte("result\n")
	body := uploadBody(name, sig, 65536, len(data), md5Hex(data), 0, data)
	for i, want := range []int{1, 1, 0} {
		if u := upload(t, s, body); u.Status != want {
			t.Fatalf("attempt %d: status %d, want %d", i, u.Status, want)
		}
	}
	if n := s.Stats().UploadRequests[name]; n != 3 {
		t.Errorf("upload requests %d, want 3", n)
	}
	s.SetFaults(Faults{UploadPermanent: true})
	if u := upload(t, s, body); u.Status != -1 {
		t.Errorf("permanent fault: status %d", u.Status)
	}
}

func get(t *testing.T, url string, hdr map[string]string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := testClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

func TestDownloads(t *testing.T) {
	dir := t.TempDir()
	diskApp := filepath.Join(dir, "diskapp.sh")
	if err := os.WriteFile(diskApp, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	apps := []App{DefaultApp(), {Name: "disk", Files: []AppFile{{Name: "disk_app", Path: diskApp}}}}
	s := startServer(t, Config{Apps: apps, Job: JobTemplate{InputSize: 5000}, Faults: Faults{CorruptDownloads: 1}})
	r := parseReply(t, rpc(t, s, makeRequest(reqOpts{reqSecs: 2})))
	if len(r.Workunits) != 2 {
		t.Fatalf("%d workunits", len(r.Workunits))
	}
	in := r.Workunits[0].FileRefs[0].FileName
	i, _ := r.fileInfo(in)
	url := r.FileInfos[i].URL
	want := JobInput(1, 5000)

	// The first download is corrupted (same length, wrong md5).
	code, got := get(t, url, nil)
	if code != 200 || len(got) != len(want) || bytes.Equal(got, want) {
		t.Errorf("corrupt download: HTTP %d, %d bytes, equal %v", code, len(got), bytes.Equal(got, want))
	}
	tests := []struct {
		name   string
		url    string
		rng    string
		code   int
		want   []byte
		wantMD string
	}{
		{"whole input", url, "", 200, want, r.FileInfos[i].MD5},
		{"resumed input", url, "bytes=1000-", 206, want[1000:], ""},
		{"app file", s.URL() + "download/" + DefaultApp().Files[0].Name, "", 200, []byte(RefAppScript), ""},
		{"app file from disk, range", s.URL() + "download/disk_app", "bytes=2-5", 206, []byte("/bin"), ""},
		{"unknown", s.URL() + "download/nope", "", 404, nil, ""},
		{"traversal", s.URL() + "download/..%2F..%2Fetc%2Fpasswd", "", 404, nil, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			hdr := map[string]string{}
			if tc.rng != "" {
				hdr["Range"] = tc.rng
			}
			code, got := get(t, tc.url, hdr)
			if code != tc.code {
				t.Fatalf("HTTP %d, want %d", code, tc.code)
			}
			if tc.want != nil && !bytes.Equal(got, tc.want) {
				t.Errorf("got %d bytes, want %d", len(got), len(tc.want))
			}
			if tc.wantMD != "" {
				sum := md5.Sum(got)
				if hex.EncodeToString(sum[:]) != tc.wantMD {
					t.Errorf("md5 mismatch")
				}
			}
		})
	}
	if n := s.Stats().Downloads[in]; n != 3 {
		t.Errorf("downloads of %s: %d, want 3", in, n)
	}
}

func TestSchedulerFaults(t *testing.T) {
	s := startServer(t, Config{Faults: Faults{HTTPErrors: 1, MalformedReplies: 1}})
	req := makeRequest(reqOpts{reqSecs: 1})
	if code, _ := post(t, s.URL()+"cgi", req); code != http.StatusInternalServerError {
		t.Errorf("HTTP error fault: got %d", code)
	}
	code, body := post(t, s.URL()+"cgi", req)
	if code != 200 || !strings.HasPrefix(string(body), "<scheduler_reply>") || strings.Contains(string(body), "</scheduler_reply>") {
		t.Errorf("malformed fault: HTTP %d body %q", code, body)
	}
	st := s.Stats()
	if st.RPCs != 2 || len(st.Sent) != 0 || len(st.HostIDs) != 0 {
		t.Errorf("faulted RPCs were processed: %+v", st)
	}
	if r := parseReply(t, rpc(t, s, req)); len(r.Results) != 1 || r.HostID != 1 {
		t.Errorf("after faults: %d results hostid %d", len(r.Results), r.HostID)
	}

	s.SetFaults(Faults{HostileFileName: "../evil"})
	r := parseReply(t, rpc(t, s, makeRequest(reqOpts{hostID: 1, reqSecs: 1})))
	if _, ok := r.fileInfo("../evil"); !ok || len(r.Workunits) != 1 || r.Workunits[0].FileRefs[0].FileName != "../evil" {
		t.Errorf("hostile name not in reply: %+v", r)
	}
	if s.Faults().HostileFileName != "" {
		t.Error("hostile name fault not consumed")
	}
	r = parseReply(t, rpc(t, s, makeRequest(reqOpts{hostID: 1, reqSecs: 1})))
	if _, ok := r.fileInfo("../evil"); ok {
		t.Error("hostile name used twice")
	}

	s.SetFaults(Faults{OversizedReply: true})
	code, body = post(t, s.URL()+"cgi", req)
	if code != 200 || len(body) <= 20<<20 {
		t.Errorf("oversized: HTTP %d, %d bytes", code, len(body))
	}
	parseReply(t, body)
}

func TestHangFaultAndClose(t *testing.T) {
	before := runtime.NumGoroutine()
	s, err := New(Config{Apps: []App{DefaultApp()}, Faults: Faults{HangReplies: 2}})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	req := makeRequest(reqOpts{reqSecs: 1})

	// A client that gives up: the handler must notice and return.
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	hreq, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.URL()+"cgi", bytes.NewReader(req))
	resp, err := http.DefaultClient.Do(hreq)
	if err == nil {
		_, err = io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	cancel()
	if err == nil {
		t.Fatal("hanging reply completed")
	}

	// A hang still in progress when the server closes.
	errc := make(chan error, 1)
	go func() {
		resp, err := http.Post(s.URL()+"cgi", "text/xml", bytes.NewReader(req))
		if err == nil {
			_, err = io.ReadAll(resp.Body)
			resp.Body.Close()
		}
		errc <- err
	}()
	deadline := time.Now().Add(10 * time.Second)
	for s.Faults().HangReplies > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	addr := strings.TrimSuffix(strings.TrimPrefix(s.URL(), "http://"), "/")
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := <-errc; err == nil {
		t.Error("hanging request completed after Close")
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		c.Close()
		t.Error("server still accepts connections after Close")
	}
	http.DefaultClient.CloseIdleConnections()
	testClient.CloseIdleConnections()
	for time.Now().Before(deadline) && runtime.NumGoroutine() > before {
		time.Sleep(20 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		buf := make([]byte, 1<<16)
		t.Errorf("%d goroutines after Close, %d before:\n%s", n, before, buf[:runtime.Stack(buf, true)])
	}
}

func TestHandlerWithHTTPTest(t *testing.T) {
	s, err := New(Config{Apps: []App{DefaultApp()}, Job: JobTemplate{InputSize: 10}})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	defer s.Close()
	code, page := get(t, ts.URL+"/", nil)
	sched := ts.URL + "/cgi"
	if code != 200 || !strings.Contains(string(page), `<link rel="boinc_scheduler" href="`+sched+`">`) ||
		!strings.Contains(string(page), "<scheduler>"+sched+"</scheduler>") {
		t.Fatalf("master page HTTP %d:\n%s", code, page)
	}
	code, body := post(t, sched, makeRequest(reqOpts{reqSecs: 1}))
	r := parseReply(t, body)
	if code != 200 || r.MasterURL != ts.URL+"/" || !strings.HasPrefix(r.FileInfos[0].URL, ts.URL+"/download/") {
		t.Errorf("HTTP %d master %q urls %+v", code, r.MasterURL, r.FileInfos)
	}
	if code, _ := get(t, ts.URL+"/cgi", nil); code != http.StatusMethodNotAllowed {
		t.Errorf("GET /cgi: %d", code)
	}
}

func TestStartAddrLoopbackOnly(t *testing.T) {
	s, err := New(Config{Apps: []App{DefaultApp()}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.StartAddr("0.0.0.0:0"); err == nil {
		t.Error("StartAddr on 0.0.0.0 accepted")
	}
	if err := s.StartAddr(":0"); err != nil {
		t.Fatalf("StartAddr(:0): %v", err)
	}
	if !strings.HasPrefix(s.URL(), "http://127.0.0.1:") {
		t.Errorf("URL %q", s.URL())
	}
	if err := s.Start(); err == nil {
		t.Error("second Start accepted")
	}
}

func TestConfigValidation(t *testing.T) {
	good := DefaultApp()
	tests := []struct {
		name string
		cfg  Config
	}{
		{"no apps", Config{}},
		{"app without name", Config{Apps: []App{{Files: good.Files}}}},
		{"app without files", Config{Apps: []App{{Name: "a"}}}},
		{"hostile file name", Config{Apps: []App{{Name: "a", Files: []AppFile{{Name: "../x"}}}}}},
		{"two main programs", Config{Apps: []App{{Name: "a", Files: []AppFile{{Name: "x", MainProgram: true}, {Name: "y", MainProgram: true}}}}}},
		{"missing path", Config{Apps: []App{{Name: "a", Files: []AppFile{{Name: "x", Path: "/nonexistent/x"}}}}}},
		{"duplicate app", Config{Apps: []App{good, good}}},
		{"bound below estimate", Config{Apps: []App{good}, Job: JobTemplate{FpopsEst: 10, FpopsBound: 1}}},
		{"hostile open name", Config{Apps: []App{good}, Job: JobTemplate{InputOpenName: "../in"}}},
		{"gzip only without gzip", Config{Apps: []App{good}, Job: JobTemplate{InputSize: 1, GzipOnly: true}}},
		{"negative GPU usage", Config{Apps: []App{func() App { a := good; a.NGPUs = -1; return a }()}}},
		{"hostile plan class", Config{Apps: []App{func() App { a := good; a.PlanClass = "<cuda>/.."; return a }()}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := New(tc.cfg); err == nil {
				t.Error("accepted")
			}
		})
	}
}

func TestSigningMatchesFixture(t *testing.T) {
	pub, err := decodePublicKey(string(fixture(t, "signing/code_sign_public_key.txt")))
	if err != nil {
		t.Fatal(err)
	}
	app := fixture(t, "signing/refapp_1.00_x86_64-pc-linux-gnu.sh")
	sig := string(fixture(t, "signing/refapp_file_signature.txt"))
	if err := verifyMD5Hex(pub, app, sig); err != nil {
		t.Fatalf("fixture signature: %v", err)
	}
	if err := verifyMD5Hex(pub, append(app, 'x'), sig); err == nil {
		t.Error("signature verified for other data")
	}
	if got := encodePublicKey(pub); got != string(fixture(t, "signing/code_sign_public_key.txt")) {
		t.Errorf("key text round trip:\n%s", got)
	}
}

func TestRefAppScript(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	for _, tc := range []struct {
		name     string
		link     bool
		input    []byte
		args     []string
		wantExit int
	}{
		{"link file", true, JobInput(3, 1000), []string{"--seconds", "0"}, 0},
		{"plain input", false, JobInput(4, 10), []string{"--seconds", "0"}, 0},
		{"no input", false, nil, []string{"--seconds", "0", "--seed", "5"}, 0},
		{"failure", true, JobInput(3, 10), []string{"--seconds", "0", "--exit", "3"}, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			slot := filepath.Join(dir, "slot")
			if err := os.Mkdir(slot, 0o755); err != nil {
				t.Fatal(err)
			}
			if tc.input != nil {
				target := filepath.Join(slot, "in")
				if tc.link {
					target = filepath.Join(dir, "input_file")
					if err := os.WriteFile(filepath.Join(slot, "in"), []byte("<soft_link>../input_file</soft_link>\n"), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				if err := os.WriteFile(target, tc.input, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			script := filepath.Join(dir, "app.sh")
			if err := os.WriteFile(script, []byte(RefAppScript), 0o755); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(sh, append([]string{script}, tc.args...)...)
			cmd.Dir = slot
			err := cmd.Run()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != tc.wantExit {
				t.Fatalf("exit %d, want %d", code, tc.wantExit)
			}
			out, _ := os.ReadFile(filepath.Join(slot, "out"))
			_, finErr := os.Stat(filepath.Join(slot, "boinc_finish_called"))
			if tc.wantExit != 0 {
				if out != nil || finErr == nil {
					t.Error("failed run wrote out or boinc_finish_called")
				}
				return
			}
			if want := RefAppOutput(tc.input, 0); !bytes.Equal(out, want) {
				t.Errorf("out:\n%s\nwant:\n%s", out, want)
			}
			if finErr != nil {
				t.Error(finErr)
			}
		})
	}
}

// TestJobLifecycle walks one job through what a client does: fetch the
// master page, get work, download and verify the files, run the app in a
// slot, upload the output and report it.
func TestJobLifecycle(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	s := startServer(t, Config{Job: JobTemplate{InputSize: 3000, CommandLine: "--seconds 0", CopyOutput: true}, RequestDelay: -1})
	if code, page := get(t, s.URL(), nil); code != 200 || !strings.Contains(string(page), s.URL()+"cgi") {
		t.Fatalf("master page: %d %s", code, page)
	}
	r := parseReply(t, rpc(t, s, makeRequest(reqOpts{reqSecs: 1})))
	pub, err := decodePublicKey(r.CodeSignKey)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	slot := filepath.Join(dir, "slot")
	if err := os.Mkdir(slot, 0o755); err != nil {
		t.Fatal(err)
	}
	var appPath string
	for _, fi := range r.FileInfos {
		if strings.Contains(fi.URL, "file_upload_handler") {
			continue
		}
		code, data := get(t, fi.URL, nil)
		if code != 200 || int64(len(data)) != fi.NBytes || md5Hex(data) != fi.MD5 {
			t.Fatalf("download %s: HTTP %d, %d bytes", fi.Name, code, len(data))
		}
		if fi.FileSignature != "" {
			if err := verifyMD5Hex(pub, data, fi.FileSignature); err != nil {
				t.Fatalf("%s: %v", fi.Name, err)
			}
			appPath = filepath.Join(dir, fi.Name)
		}
		if err := os.WriteFile(filepath.Join(dir, fi.Name), data, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	wu := r.Workunits[0]
	link := fmt.Sprintf("<soft_link>../%s</soft_link>\n", wu.FileRefs[0].FileName)
	if err := os.WriteFile(filepath.Join(slot, wu.FileRefs[0].OpenName), []byte(link), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(sh, append([]string{appPath}, strings.Fields(wu.CommandLine)...)...)
	cmd.Dir = slot
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("app: %v\n%s", err, out)
	}
	out, err := os.ReadFile(filepath.Join(slot, "out"))
	if err != nil {
		t.Fatal(err)
	}
	if want := RefAppOutput(JobInput(1, 3000), 0); !bytes.Equal(out, want) {
		t.Fatalf("output %q, want %q", out, want)
	}
	res := r.Results[0]
	outName := res.FileRefs[0].FileName
	i, _ := r.fileInfo(outName)
	if u := upload(t, s, uploadBody(outName, r.FileInfos[i].XMLSignature, 65536, len(out), md5Hex(out), 0, out)); u.Status != 0 {
		t.Fatalf("upload: %+v", u)
	}
	ack := parseReply(t, rpc(t, s, makeRequest(reqOpts{hostID: r.HostID, codeSignKey: r.CodeSignKey, reports: []reportOpts{
		{name: res.Name, state: 5, stderr: "refapp: done", outputs: map[string]string{outName: md5Hex(out)}},
	}})))
	if len(ack.Acks) != 1 || ack.Acks[0].Name != res.Name {
		t.Errorf("acks %+v", ack.Acks)
	}
	st := s.Stats()
	if len(st.Errors) != 0 || st.Reported[res.Name] != 1 || !bytes.Equal(st.Uploaded[outName], out) {
		t.Errorf("stats: errors %q reported %v", st.Errors, st.Reported)
	}
}
