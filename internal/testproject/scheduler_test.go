package testproject

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/xml"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestFixtureRequestsParse(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(fixtureDir, "scheduler", "*request*.xml"))
	if err != nil || len(files) == 0 {
		t.Skipf("no fixture requests: %v", err)
	}
	sort.Strings(files)
	type want struct {
		exit, state int
		stderr      string
	}
	expect := map[string]map[string]want{
		"04_request_report_two_results.xml": {
			"refwu_1795268541_1_0": {0, 5, "refapp: done"},
			"refwu_1795268541_2_0": {0, 5, "refapp: done"},
		},
		"x_request_report_aborted_result.xml": {
			"refwu_1795268042_3_0": {203, 6, ""},
		},
		"x_request_report_download_error_unsigned_app.xml": {
			"refwu_1795268309_1_0": {-186, 1, "missing signature"},
		},
	}
	s := startServer(t, Config{Job: JobTemplate{InputSize: 1035}})
	for _, f := range files {
		base := filepath.Base(f)
		t.Run(base, func(t *testing.T) {
			reply := parseReply(t, rpc(t, s, fixture(t, filepath.Join("scheduler", base))))
			st := s.Stats()
			if len(st.Errors) > 0 {
				t.Fatalf("errors: %q", st.Errors)
			}
			var acked []string
			for _, a := range reply.Acks {
				acked = append(acked, a.Name)
			}
			var wantAcks []string
			for name, w := range expect[base] {
				wantAcks = append(wantAcks, name)
				if st.Reported[name] != 1 {
					t.Errorf("%s reported %d times, want 1", name, st.Reported[name])
				}
				rr := st.ReportedResults[name]
				if rr.ExitStatus != w.exit || rr.State != w.state {
					t.Errorf("%s: exit %d state %d, want %d %d", name, rr.ExitStatus, rr.State, w.exit, w.state)
				}
				if !strings.Contains(rr.StderrOut, w.stderr) {
					t.Errorf("%s: stderr %q lacks %q", name, rr.StderrOut, w.stderr)
				}
			}
			sort.Strings(acked)
			sort.Strings(wantAcks)
			if !slices.Equal(acked, wantAcks) {
				t.Errorf("acks %q, want %q", acked, wantAcks)
			}
		})
	}
	st := s.Stats()
	if rr := st.ReportedResults["refwu_1795268541_1_0"]; !slices.Equal(rr.OutputFiles, []string{"refwu_1795268541_1_0_r7919_0"}) ||
		rr.OutputMD5["refwu_1795268541_1_0_r7919_0"] != "b351e64117fecd13f028009656b05c18" || rr.FinalElapsedTime != 20.034629 {
		t.Errorf("report of refwu_1795268541_1_0: %+v", rr)
	}
}

// TestReplyShape compares the element structure of our replies with the
// captured replies of the reference server, element names only.
func TestReplyShape(t *testing.T) {
	s := startServer(t, Config{
		Name:      "BOINC Reference Fake Project",
		Job:       JobTemplate{InputSize: 1035, CopyOutput: true, CommandLine: "--seconds 30"},
		TotalJobs: 2,
	})
	steps := []struct {
		request, reply string
	}{
		{"01_request_first_contact.xml", "01_reply_first_contact_with_work.xml"},
		{"02_request_work_fetch_task_running.xml", "02_reply_second_task.xml"},
		{"03_request_work_fetch_upload_pending.xml", "03_reply_no_work.xml"},
		{"04_request_report_two_results.xml", "04_reply_result_acks.xml"},
	}
	for _, st := range steps {
		t.Run(st.request, func(t *testing.T) {
			got := rpc(t, s, fixture(t, "scheduler/"+st.request))
			parseReply(t, got)
			want := fixture(t, "scheduler/"+st.reply)
			gp, wp := elementPaths(t, got, 3), elementPaths(t, want, 3)
			if !slices.Equal(gp, wp) {
				t.Errorf("element sequence differs\n got: %q\nwant: %q\nreply:\n%s", gp, wp, got)
			}
		})
	}
	if errs := s.Stats().Errors; len(errs) > 0 {
		t.Errorf("errors: %q", errs)
	}
}

func TestFirstContactReplyContents(t *testing.T) {
	s := startServer(t, Config{Job: JobTemplate{InputSize: 100, CommandLine: "--seconds 1 --n {n} --seed {seed}"}})
	r := parseReply(t, rpc(t, s, makeRequest(reqOpts{reqSecs: 1})))
	if r.HostID != 1 || r.MasterURL != s.URL() || r.RequestDelay != 5 || r.ProjectName != defaultName {
		t.Errorf("header: hostid %d master %q delay %g name %q", r.HostID, r.MasterURL, r.RequestDelay, r.ProjectName)
	}
	if len(r.Results) != 1 || len(r.Workunits) != 1 {
		t.Fatalf("got %d results, %d workunits; want 1", len(r.Results), len(r.Workunits))
	}
	job := s.Stats().Jobs[r.Results[0].Name]
	if want := "--seconds 1 --n 1 --seed " + strconv.FormatUint(JobSeed(1), 10); r.Workunits[0].CommandLine != want || job.CommandLine != want {
		t.Errorf("command line %q (job %q), want %q", r.Workunits[0].CommandLine, job.CommandLine, want)
	}
	in, ok := r.fileInfo(job.InputFile)
	if !ok || r.FileInfos[in].MD5 != md5Hex(JobInput(1, 100)) || r.FileInfos[in].NBytes != 100 {
		t.Errorf("input file_info %+v, job %+v", r.FileInfos, job)
	}
	if r.CodeSignKey == "" {
		t.Fatal("first contact reply has no code_sign_key")
	}
	pub, err := decodePublicKey(r.CodeSignKey)
	if err != nil {
		t.Fatal(err)
	}
	app := DefaultApp()
	i, ok := r.fileInfo(app.Files[0].Name)
	if !ok {
		t.Fatalf("no file_info for %s", app.Files[0].Name)
	}
	if err := verifyMD5Hex(pub, app.Files[0].Data, r.FileInfos[i].FileSignature); err != nil {
		t.Errorf("app file signature: %v", err)
	}
	out, ok := r.fileInfo(job.OutputFiles[0])
	if !ok || r.FileInfos[out].XMLSignature == "" || !strings.Contains(r.FileInfos[out].URL, "file_upload_handler") {
		t.Errorf("output file_info: %+v", r.FileInfos)
	}
	// A client that already holds the key does not get it again, nor a
	// new hostid.
	r2 := parseReply(t, rpc(t, s, makeRequest(reqOpts{hostID: 1, reqSecs: 0, codeSignKey: r.CodeSignKey})))
	if r2.CodeSignKey != "" || r2.HostID != 0 {
		t.Errorf("second reply: key %q hostid %d", r2.CodeSignKey, r2.HostID)
	}
	if len(r2.Messages) != 1 || r2.Messages[0] != "No tasks sent" {
		t.Errorf("second reply messages %q", r2.Messages)
	}
}

func TestWorkSelection(t *testing.T) {
	tests := []struct {
		name     string
		cfg      Config
		reqs     []reqOpts
		wantJobs []int
	}{
		{"covers requested seconds", Config{}, []reqOpts{{reqSecs: 2.5}}, []int{3}},
		{"capped per RPC", Config{MaxJobsPerRPC: 2}, []reqOpts{{reqSecs: 100}}, []int{2}},
		{"default cap 4", Config{}, []reqOpts{{reqSecs: 100}}, []int{4}},
		{"long jobs", Config{Job: JobTemplate{FpopsEst: 1e11}}, []reqOpts{{reqSecs: 150}}, []int{2}},
		{"total jobs", Config{TotalJobs: 3}, []reqOpts{{reqSecs: 2}, {hostID: 1, reqSecs: 2}, {hostID: 1, reqSecs: 2}}, []int{2, 1, 0}},
		{"no request", Config{}, []reqOpts{{reqSecs: 0}}, []int{0}},
		// A real scheduler sends while seconds or idle instances are asked.
		{"idle instances beyond the seconds", Config{}, []reqOpts{{reqSecs: 1, reqInst: 3}}, []int{3}},
		{"idle instances alone", Config{}, []reqOpts{{reqInst: 2}}, []int{2}},
		{"dont_send_work", Config{}, []reqOpts{{reqSecs: 10, dontSend: true}}, []int{0}},
		{"wrong authenticator", Config{Authenticator: "right"}, []reqOpts{{auth: "wrong", reqSecs: 10}}, []int{0}},
		{"right authenticator", Config{Authenticator: "right"}, []reqOpts{{auth: "right", reqSecs: 1}}, []int{1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := startServer(t, tc.cfg)
			for i, o := range tc.reqs {
				r := parseReply(t, rpc(t, s, makeRequest(o)))
				if len(r.Results) != tc.wantJobs[i] || len(r.Workunits) != tc.wantJobs[i] {
					t.Errorf("rpc %d: %d results, want %d", i, len(r.Results), tc.wantJobs[i])
				}
				if tc.wantJobs[i] == 0 && len(r.Messages) == 0 {
					t.Errorf("rpc %d: no message in a reply without work", i)
				}
			}
			wantErr := tc.cfg.Authenticator != "" && tc.reqs[0].auth != tc.cfg.Authenticator
			if got := len(s.Stats().Errors) > 0; got != wantErr {
				t.Errorf("errors %q, want some: %v", s.Stats().Errors, wantErr)
			}
		})
	}
}

func TestReportChecks(t *testing.T) {
	s := startServer(t, Config{Job: JobTemplate{InputSize: 10}})
	r := parseReply(t, rpc(t, s, makeRequest(reqOpts{reqSecs: 2})))
	if len(r.Results) != 2 {
		t.Fatalf("got %d jobs, want 2", len(r.Results))
	}
	jobs := s.Stats().Jobs
	j1, j2 := jobs[r.Results[0].Name], jobs[r.Results[1].Name]

	// Upload j1's output properly.
	i, _ := r.fileInfo(j1.OutputFiles[0])
	data := RefAppOutput(JobInput(j1.N, 10), 1)
	if u := upload(t, s, uploadBody(j1.OutputFiles[0], r.FileInfos[i].XMLSignature, 65536, len(data), md5Hex(data), 0, data)); u.Status != 0 {
		t.Fatalf("upload: %+v", u)
	}
	// j1 reported as uploaded: fine. j2 reported as uploaded without an
	// upload: a protocol error.
	rep := rpc(t, s, makeRequest(reqOpts{hostID: 1, reports: []reportOpts{
		{name: j1.ResultName, state: 5, stderr: "ok", outputs: map[string]string{j1.OutputFiles[0]: md5Hex(data)}},
		{name: j2.ResultName, state: 5},
	}}))
	if acks := parseReply(t, rep).Acks; len(acks) != 2 {
		t.Errorf("acks %+v", acks)
	}
	st := s.Stats()
	if len(st.Errors) != 1 || !strings.Contains(st.Errors[0], j2.ResultName) {
		t.Errorf("errors %q, want one about %s", st.Errors, j2.ResultName)
	}
	if st.Reported[j1.ResultName] != 1 || st.Reported[j2.ResultName] != 1 {
		t.Errorf("reported %v", st.Reported)
	}
	if !slices.Equal(st.Acked, []string{j1.ResultName, j2.ResultName}) {
		t.Errorf("acked %q", st.Acked)
	}
	// A report repeated after a lost reply is counted again.
	rpc(t, s, makeRequest(reqOpts{hostID: 1, reports: []reportOpts{{name: j1.ResultName, state: 5}}}))
	if n := s.Stats().Reported[j1.ResultName]; n != 2 {
		t.Errorf("reported %d times, want 2", n)
	}
}

func TestBadRequests(t *testing.T) {
	tests := []struct {
		name string
		body string
	}{
		{"empty", ""},
		{"not xml", "hello"},
		{"truncated", "<scheduler_request>\n<authenticator>x</authenticator>\n<hostid>0"},
		{"wrong root", "<scheduler_reply></scheduler_reply>"},
		{"bad number", "<scheduler_request><authenticator>x</authenticator><hostid>abc</hostid></scheduler_request>"},
		{"result without name", "<scheduler_request><authenticator>x</authenticator><result><state>5</state></result></scheduler_request>"},
		{"no authenticator", "<scheduler_request><hostid>0</hostid></scheduler_request>"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := startServer(t, Config{})
			r := parseReply(t, rpc(t, s, []byte(tc.body)))
			if len(r.Results) != 0 || len(r.Messages) != 1 {
				t.Errorf("reply %+v", r)
			}
			if errs := s.Stats().Errors; len(errs) != 1 {
				t.Errorf("errors %q, want 1", errs)
			}
		})
	}
}

func TestRequestDelay(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want float64
	}{{0, 5}, {-1, 0}, {1500 * time.Millisecond, 1.5}} {
		s := startServer(t, Config{RequestDelay: tc.d})
		if r := parseReply(t, rpc(t, s, makeRequest(reqOpts{}))); r.RequestDelay != tc.want {
			t.Errorf("RequestDelay %v: sent %g, want %g", tc.d, r.RequestDelay, tc.want)
		}
	}
}

func TestSigningKeyReuse(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for range 2 {
		s := startServer(t, Config{SigningKey: key})
		keys = append(keys, parseReply(t, rpc(t, s, makeRequest(reqOpts{}))).CodeSignKey)
	}
	if keys[0] == "" || keys[0] != keys[1] {
		t.Errorf("keys differ or are empty: %q", keys)
	}
	big, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := New(Config{Apps: []App{DefaultApp()}, SigningKey: big}); err == nil {
		t.Error("2048-bit key accepted")
	}
	s := startServer(t, Config{Unsigned: true})
	r := parseReply(t, rpc(t, s, makeRequest(reqOpts{reqSecs: 1})))
	for _, fi := range r.FileInfos {
		if fi.FileSignature != "" || fi.XMLSignature != "" {
			t.Errorf("unsigned server signed %s", fi.Name)
		}
	}
	if r.CodeSignKey != "" {
		t.Error("unsigned server sent a key")
	}
}

// TestAnonymousPlatform: a request with <platform_name>anonymous</platform_name>
// gets jobs only for the apps it lists a version of, named with that
// version (the highest of an app's), and no app version or app file in
// the reply, as a real scheduler answers an app_info.xml client.
func TestAnonymousPlatform(t *testing.T) {
	other := ShellApp("other", RefAppScript)
	other.FriendlyName = "Other app"
	s := startServer(t, Config{Apps: []App{DefaultApp(), other}, MaxJobsPerRPC: 2})
	versions := `<app_version>
    <app_name>refapp</app_name>
    <version_num>150</version_num>
    <platform>x86_64-pc-linux-gnu</platform>
    <avg_ncpus>1.000000</avg_ncpus>
    <flops>1000000000.000000</flops>
</app_version>
<app_version>
    <app_name>refapp</app_name>
    <version_num>199</version_num>
    <platform>x86_64-pc-linux-gnu</platform>
    <avg_ncpus>1.000000</avg_ncpus>
    <flops>1000000000.000000</flops>
    <plan_class>opt</plan_class>
    <api_version>7.20.0</api_version>
</app_version>
`
	body := rpc(t, s, makeRequest(reqOpts{reqSecs: 10, reqInst: 2, platform: "anonymous", appVersions: versions}))
	var r struct {
		AppVersions []struct{} `xml:"app_version"`
		Apps        []struct{} `xml:"app"`
		FileInfos   []struct {
			Name string `xml:"name"`
		} `xml:"file_info"`
		Workunits []struct {
			AppName string `xml:"app_name"`
		} `xml:"workunit"`
		Results []struct {
			Name       string `xml:"name"`
			Platform   string `xml:"platform"`
			VersionNum int    `xml:"version_num"`
			PlanClass  string `xml:"plan_class"`
		} `xml:"result"`
		Messages []string `xml:"message"`
	}
	if err := xml.Unmarshal(body, &r); err != nil {
		t.Fatalf("reply: %v\n%s", err, body)
	}
	if len(r.Results) != 2 || len(r.AppVersions) != 0 || len(r.Apps) != 0 {
		t.Fatalf("reply has %d results, %d app_versions, %d apps; want 2, 0, 0\n%s", len(r.Results), len(r.AppVersions), len(r.Apps), body)
	}
	for _, res := range r.Results {
		if res.VersionNum != 199 || res.PlanClass != "opt" || res.Platform != "x86_64-pc-linux-gnu" {
			t.Errorf("result %+v, want version 199 plan class opt", res)
		}
	}
	for _, w := range r.Workunits {
		if w.AppName != "refapp" {
			t.Errorf("workunit for app %q, which the client has no version of", w.AppName)
		}
	}
	for _, f := range r.FileInfos {
		if strings.HasSuffix(f.Name, ".sh") {
			t.Errorf("reply describes app file %s", f.Name)
		}
	}
	if !slices.Contains(r.Messages, "Your app_info.xml file doesn't have a usable version of Other app.") {
		t.Errorf("messages %q lack the real scheduler's words for the app without a version", r.Messages)
	}
	st := s.Stats()
	if st.AnonymousRPCs != 1 || len(st.AnnouncedVersions) != 2 || st.AnnouncedVersions[1].VersionNum != 199 ||
		st.AnnouncedVersions[1].PlanClass != "opt" || st.AnnouncedVersions[1].APIVersion != "7.20.0" {
		t.Errorf("stats: %d anonymous RPCs, versions %+v", st.AnonymousRPCs, st.AnnouncedVersions)
	}
	if j := st.Jobs[r.Results[0].Name]; !j.Anonymous || j.VersionNum != 199 || j.PlanClass != "opt" {
		t.Errorf("job %+v", j)
	}
}
