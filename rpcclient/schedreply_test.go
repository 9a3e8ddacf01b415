package rpcclient

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/boincd/boincd/boinc"
	"github.com/boincd/boincd/platform"
)

func TestParseReplyFirstContact(t *testing.T) {
	r, err := ParseSchedulerReply(readFixture(t, "scheduler/01_reply_first_contact_with_work.xml"))
	if err != nil {
		t.Fatal(err)
	}
	const (
		xmlSig = "a84dad895dd0cebc9682de1929c6fc1b3f2ff021f8edb2c05024639cca66f377\n" +
			"ad5516084c94f35ee0f4bd3c4323b22f32bcaffabd59609f7f6fde2ba250e11d\n" +
			"00fa32c255949fab10db2cea4db7df77699eb0d44fb9ba0693ba459f6725c8b1\n" +
			"8ff6de74411b884f29d7b5dc34f18776e0aa9af69add6279430fa6a652fe038f\n."
		fileSig = "883f2c353cd28a5e8c05f9ba46def14e85814dfa78548ca0cb67edd18ecbbe0e\n" +
			"09651f961e173cc7545b8a10b30b60357a512e60ce510703b128c842e989c66c\n" +
			"e6302f760875cf3ff72fad6e884a2758dc3d2ee68d70205cc59d7ceb54078343\n" +
			"439306fadc3c15059d67b6892fc2e0f0727c2783321dfff2872b4e89023cc5ca\n."
	)
	want := &SchedulerReply{
		SchedulerVersion: 719,
		MasterURL:        "http://127.0.0.1:18080/",
		ProjectName:      "BOINC Reference Fake Project",
		UserName:         "refuser",
		CrossProjectID:   "11111111111111111111111111111111",
		EmailHash:        "00000000000000000000000000000000",
		UserCreateTime:   1795182141,
		HostCreateTime:   1795268541,
		HostID:           1,
		RequestDelay:     5,
		ProjectPrefs:     "\n<resource_share>100</resource_share>\n",
		CodeSignKey:      fixtureCodeSignKey,
		Apps:             []boinc.App{{Name: "refapp", UserFriendlyName: "Reference sleeper app"}},
		FileInfos: []boinc.FileInfo{
			{Name: "refapp_1.00_x86_64-pc-linux-gnu.sh", DownloadURLs: []string{"http://127.0.0.1:18080/download/refapp_1.00_x86_64-pc-linux-gnu.sh"},
				Executable: true, NBytes: 775, MD5: "8894bb6c30711b942d0d8cef294d2721", FileSignature: fileSig},
			{Name: "refwu_1795268541_1_in", DownloadURLs: []string{"http://127.0.0.1:18080/download/refwu_1795268541_1_in"},
				NBytes: 1035, MD5: "f425a2c4e0dffca0b56c8fa1a44d85ae"},
			{Name: "refwu_1795268541_1_0_r7919_0", MaxNBytes: 65536,
				UploadURLs: []string{"http://127.0.0.1:18080/cgi-bin/file_upload_handler"}, XMLSignature: xmlSig},
		},
		AppVersions: []boinc.AppVersion{{AppName: "refapp", VersionNum: 100, Platform: platform.LinuxX86_64, AvgNCPUs: 1, Flops: 1e9,
			FileRefs: []boinc.FileRef{{FileName: "refapp_1.00_x86_64-pc-linux-gnu.sh", MainProgram: true}}}},
		Workunits: []boinc.Workunit{{Name: "refwu_1795268541_1", AppName: "refapp", VersionNum: 100, CommandLine: "--seconds 30",
			RscFpopsEst: 3e10, RscFpopsBound: 1e13, RscMemoryBound: 1e8, RscDiskBound: 1e8,
			InputFiles: []boinc.FileRef{{FileName: "refwu_1795268541_1_in", OpenName: "in"}}}},
		Results: []boinc.Result{{Name: "refwu_1795268541_1_0", WUName: "refwu_1795268541_1",
			ReportDeadline: time.Unix(1795873355, 0).UTC(), Platform: platform.LinuxX86_64, VersionNum: 100,
			OutputFiles: []boinc.FileRef{{FileName: "refwu_1795268541_1_0_r7919_0", OpenName: "out", CopyFile: true}}}},
	}
	if !reflect.DeepEqual(r, want) {
		t.Errorf("got  %+v\nwant %+v", r, want)
	}
}

func TestParseReplyFixtures(t *testing.T) {
	tests := []struct {
		file  string
		check func(t *testing.T, r *SchedulerReply)
	}{
		{"02_reply_second_task.xml", func(t *testing.T, r *SchedulerReply) {
			if r.HostID != 0 || r.CodeSignKey != "" || len(r.Results) != 1 || r.Results[0].Name != "refwu_1795268541_2_0" ||
				r.Results[0].ReportDeadline.Unix() != 1795873362 || len(r.Workunits) != 1 || len(r.FileInfos) != 3 {
				t.Errorf("unexpected %+v", r)
			}
		}},
		{"03_reply_no_work.xml", func(t *testing.T, r *SchedulerReply) {
			if !reflect.DeepEqual(r.Messages, []Message{{Priority: "low", Text: "No tasks sent"}}) || len(r.Results) != 0 || r.RequestDelay != 5 {
				t.Errorf("unexpected %+v", r)
			}
		}},
		{"04_reply_result_acks.xml", func(t *testing.T, r *SchedulerReply) {
			if !reflect.DeepEqual(r.ResultAcks, []string{"refwu_1795268541_1_0", "refwu_1795268541_2_0"}) || len(r.Messages) != 1 {
				t.Errorf("unexpected %+v", r)
			}
		}},
		{"x_reply_unsigned_app_rejected_by_client.xml", func(t *testing.T, r *SchedulerReply) {
			if r.HostID != 1 || r.CodeSignKey != "" || r.FileInfos[0].FileSignature != "" || r.MasterURL != "http://127.0.0.1:18081/" ||
				r.Workunits[0].RscFpopsEst != 1e10 || r.FileInfos[2].XMLSignature != "" {
				t.Errorf("unexpected %+v", r)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			r, err := ParseSchedulerReply(readFixture(t, filepath.Join("scheduler", tc.file)))
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, r)
		})
	}
}

func TestParseReplyVariants(t *testing.T) {
	tests := []struct {
		name  string
		in    string
		check func(t *testing.T, r *SchedulerReply)
	}{
		{"cgi header and declaration", "Content-type: text/xml\n\n<?xml version=\"1.0\"?>\n<scheduler_reply>\n<project_name>X &amp; Y</project_name>\n<request_delay>60</request_delay>\n</scheduler_reply>\n",
			func(t *testing.T, r *SchedulerReply) {
				if r.ProjectName != "X & Y" || r.RequestDelay != 60 || r.NextRPCDelay != nil {
					t.Errorf("got %+v", r)
				}
			}},
		{"chunk length", "1a4\r\n<scheduler_reply><next_rpc_delay>0</next_rpc_delay></scheduler_reply>",
			func(t *testing.T, r *SchedulerReply) {
				if r.NextRPCDelay == nil || *r.NextRPCDelay != 0 {
					t.Errorf("next_rpc_delay %v", r.NextRPCDelay)
				}
			}},
		{"booleans and deprecated no apps", `<scheduler_reply>
<dont_use_dcf/><project_is_down>1</project_is_down><ended>0</ended><send_full_workload></send_full_workload>
<no_rsc_apps>NVIDIA</no_rsc_apps><no_cpu_apps>1</no_cpu_apps><no_cuda_apps/><no_ati_apps>0</no_ati_apps>
<unknown_thing><nested>1</nested></unknown_thing>
</scheduler_reply>`, func(t *testing.T, r *SchedulerReply) {
			if !r.DontUseDCF || !r.ProjectIsDown || r.Ended || !r.SendFullWorkload {
				t.Errorf("flags %+v", r)
			}
			if !reflect.DeepEqual(r.NoRscApps, []string{"NVIDIA", "CPU"}) {
				t.Errorf("no_rsc_apps %v", r.NoRscApps)
			}
		}},
		{"app version defaults and cuda", `<scheduler_reply><app_version><app_name>a</app_name><version_num>7</version_num>
<coproc><type>CUDA</type><count>0.5</count></coproc><plan_class>cuda</plan_class></app_version></scheduler_reply>`,
			func(t *testing.T, r *SchedulerReply) {
				av := r.AppVersions[0]
				if av.AvgNCPUs != 1 || av.Platform != "" || av.Coproc == nil || *av.Coproc != (boinc.CoprocUsage{Type: "NVIDIA", Count: 0.5}) {
					t.Errorf("got %+v", av)
				}
			}},
		{"workunit defaults, trimmed command line", `<scheduler_reply><workunit><name>w</name><app_name>a</app_name>
<command_line>
  --x 1
</command_line></workunit></scheduler_reply>`, func(t *testing.T, r *SchedulerReply) {
			wu := r.Workunits[0]
			if wu.CommandLine != "--x 1" || wu.RscFpopsEst != boinc.DefaultRscFpopsEst || wu.RscDiskBound != boinc.DefaultRscDiskBound {
				t.Errorf("got %+v", wu)
			}
		}},
		// stage_file --gzip: <gzipped_url>s beside <url> and
		// <gzipped_nbytes> (FILE_INFO::parse); <nbytes> and <md5_cksum>
		// stay the uncompressed file's.
		{"gzipped urls", `<scheduler_reply><file_info>
<name>in</name>
<url>http://a/download/in</url>
<gzipped_url> http://a/download/in.gz </gzipped_url>
<gzipped_url>http://b/download/in.gz</gzipped_url>
<url>http://b/download/in</url>
<md5_cksum>0123456789abcdef0123456789abcdef</md5_cksum>
<nbytes>54321</nbytes>
<gzipped_nbytes>3900</gzipped_nbytes>
</file_info><file_info><name>plain</name><url>http://a/plain</url><nbytes>1</nbytes></file_info></scheduler_reply>`, func(t *testing.T, r *SchedulerReply) {
			f := r.FileInfos[0]
			if !reflect.DeepEqual(f.GzippedURLs, []string{"http://a/download/in.gz", "http://b/download/in.gz"}) ||
				!reflect.DeepEqual(f.DownloadURLs, []string{"http://a/download/in", "http://b/download/in"}) ||
				f.GzippedNBytes != 3900 || f.NBytes != 54321 || f.MD5 != "0123456789abcdef0123456789abcdef" || f.IsUpload() {
				t.Errorf("gzipped file %+v", f)
			}
			if p := r.FileInfos[1]; p.GzippedURLs != nil || p.GzippedNBytes != 0 {
				t.Errorf("plain file %+v has gzip fields", p)
			}
		}},
		{"explicit urls, subdir open name, aborts, deletes, messages", `<scheduler_reply>
<file_info><name>f</name><download_url>http://a/f</download_url><upload_url>http://b/up</upload_url><sticky/></file_info>
<result><name>r</name><wu_name>w</wu_name><report_immediately/><file_ref><file_name>o</file_name><open_name>sub/out</open_name><optional>1</optional></file_ref></result>
<result_abort><name>x</name></result_abort><result_abort_if_not_started><name>y</name></result_abort_if_not_started>
<delete_file_info>f</delete_file_info>
<message priority="notice">see <a href="http://x">here</a></message>
<message priority="high"><![CDATA[a < b]]></message>
<global_preferences><mod_time>5</mod_time></global_preferences>
<project_preferences/>
</scheduler_reply>`, func(t *testing.T, r *SchedulerReply) {
			f := r.FileInfos[0]
			if !f.Sticky || !reflect.DeepEqual(f.DownloadURLs, []string{"http://a/f"}) || !reflect.DeepEqual(f.UploadURLs, []string{"http://b/up"}) {
				t.Errorf("file %+v", f)
			}
			res := r.Results[0]
			if !res.ReportImmediately || res.OutputFiles[0] != (boinc.FileRef{FileName: "o", OpenName: "sub/out", Optional: true}) {
				t.Errorf("result %+v", res)
			}
			if r.ResultAborts[0] != "x" || r.ResultAbortsIfNotStarted[0] != "y" || r.DeleteFileInfos[0] != "f" {
				t.Errorf("lists %+v", r)
			}
			want := []Message{{"notice", `see <a href="http://x">here</a>`}, {"high", "a < b"}}
			if !reflect.DeepEqual(r.Messages, want) {
				t.Errorf("messages %q", r.Messages)
			}
			if r.GlobalPrefs != "<mod_time>5</mod_time>" || r.ProjectPrefs != "" {
				t.Errorf("prefs %q %q", r.GlobalPrefs, r.ProjectPrefs)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := ParseSchedulerReply([]byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, r)
		})
	}
}

func TestParseReplyErrors(t *testing.T) {
	fixture := string(readFixture(t, "scheduler/01_reply_first_contact_with_work.xml"))
	tests := []struct {
		name, in, want string
	}{
		{"empty", "", "no <scheduler_reply> start tag"},
		{"html error page", "<html><body>500</body></html>", "no <scheduler_reply> start tag"},
		{"missing end tag", "<scheduler_reply>\n<project_name>x</project_name>\n", "no </scheduler_reply> end tag"},
		{"truncated", fixture[:len(fixture)/2], "end tag"},
		{"truncated inside element", "<scheduler_reply><result><name>x</scheduler_reply>", "malformed XML"},
		{"mismatched tags", "<scheduler_reply><project_name>x</user_name></scheduler_reply>", "malformed XML"},
		{"bad number", "<scheduler_reply><request_delay>soon</request_delay></scheduler_reply>", `<request_delay>: invalid number "soon"`},
		{"nan", "<scheduler_reply><request_delay>NaN</request_delay></scheduler_reply>", "invalid number"},
		{"dotdot file", `<scheduler_reply><file_info><name>ok</name></file_info><file_info><name>a</name></file_info><file_info><name>../x</name></file_info></scheduler_reply>`,
			`file_info #3 "../x"`},
		{"absolute file", `<scheduler_reply><file_info><name>/etc/passwd</name></file_info></scheduler_reply>`, "absolute path"},
		{"nul in name", "<scheduler_reply><file_info><name>a\x00b</name></file_info></scheduler_reply>", "malformed XML"},
		{"control char ref", "<scheduler_reply><file_info><name>a&#1;b</name></file_info></scheduler_reply>", "malformed XML"},
		{"percent", `<scheduler_reply><file_info><name>a%2fb</name></file_info></scheduler_reply>`, `file_info #1 "a%2fb"`},
		{"slash in physical name", `<scheduler_reply><file_info><name>a/b</name></file_info></scheduler_reply>`, "path separator"},
		{"file_info without name", `<scheduler_reply><file_info><nbytes>1</nbytes></file_info></scheduler_reply>`, "file_info #1: no <name>"},
		{"hostile file_ref", `<scheduler_reply><workunit><name>w</name><app_name>a</app_name><file_ref><file_name>../../x</file_name></file_ref></workunit></scheduler_reply>`,
			`workunit #1 "w": file_ref`},
		{"hostile open name", `<scheduler_reply><result><name>r</name><wu_name>w</wu_name><file_ref><file_name>x</file_name><open_name>../out</open_name></file_ref></result></scheduler_reply>`,
			`result #1 "r": file_ref open_name`},
		{"result without wu", `<scheduler_reply><result><name>r</name></result></scheduler_reply>`, "no <wu_name>"},
		{"app version without app", `<scheduler_reply><app_version><version_num>1</version_num></app_version></scheduler_reply>`, "app_version #1: no <app_name>"},
		{"bad version", `<scheduler_reply><app_version><app_name>a</app_name><version_num>1.5</version_num></app_version></scheduler_reply>`, "invalid integer"},
		{"ack without name", `<scheduler_reply><result_ack></result_ack></scheduler_reply>`, "result_ack: no <name>"},
		{"negative size", `<scheduler_reply><file_info><name>a</name><nbytes>-5</nbytes></file_info></scheduler_reply>`, "negative size"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := ParseSchedulerReply([]byte(tc.in))
			if err == nil {
				t.Fatalf("no error, got %+v", r)
			}
			if r != nil {
				t.Error("partial reply returned with error")
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "scheduler reply: ") {
				t.Errorf("error %q, want it to contain %q", err, tc.want)
			}
		})
	}
}

func FuzzParseSchedulerReply(f *testing.F) {
	for _, name := range []string{"01_reply_first_contact_with_work.xml", "02_reply_second_task.xml", "03_reply_no_work.xml",
		"04_reply_result_acks.xml", "x_reply_unsigned_app_rejected_by_client.xml"} {
		f.Add(readFixture(f, filepath.Join("scheduler", name)))
	}
	f.Add([]byte("<scheduler_reply><message priority=\"x\">a<b/></message><project_preferences><x/></project_preferences></scheduler_reply>"))
	for _, b := range realServerReplies(f) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := ParseSchedulerReply(data)
		if err != nil && r != nil {
			t.Fatal("reply and error both returned")
		}
		if err == nil {
			for _, fi := range r.FileInfos {
				if boinc.ValidateFileName(fi.Name, false) != nil {
					t.Fatalf("invalid name %q accepted", fi.Name)
				}
			}
		}
	})
}

// FuzzFastTokenizerMatchesDecoder checks the fast path against encoding/xml:
// whatever the fast tokenizer accepts, encoding/xml must accept with the
// same result.
func FuzzFastTokenizerMatchesDecoder(f *testing.F) {
	for _, name := range []string{"01_reply_first_contact_with_work.xml", "03_reply_no_work.xml", "04_reply_result_acks.xml"} {
		f.Add(readFixture(f, filepath.Join("scheduler", name)))
	}
	for _, s := range []string{
		`<scheduler_reply><message priority='low'>a &amp; b &#65;&#x42; <![CDATA[c]]></message><project_preferences><a x="1"/> <!-- c --></project_preferences></scheduler_reply>`,
		"<scheduler_reply><project_name>caf\u00e9</project_name><x  a = \"1\" ></x ></scheduler_reply>",
		"<scheduler_reply><project_name>a]]>b</project_name></scheduler_reply>",
		"<scheduler_reply><message a=\"1\"b='2' c=\"&lt;\">x\ty</message\n><x/ ><!-- a- --><!-- b ---></scheduler_reply>",
		"<scheduler_reply><user_name>&#0;&#x;&#65&#x10FFFF;&#xD800;&nbsp;</user_name><hostid>07</hostid></scheduler_reply>",
		"<scheduler_reply><project_name>a&b&amp;c&d;&1e&-f&</project_name></scheduler_reply>",
	} {
		f.Add([]byte(s))
	}
	for _, b := range realServerReplies(f) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		start := findStartTag(data)
		if start < 0 {
			return
		}
		src := data[start:]
		fast, ferr := parseFast(src)
		std, serr := parseStd(src)
		if ferr == nil && serr != nil {
			t.Fatalf("fast path accepted what encoding/xml rejects (%v): %q", serr, src)
		}
		if ferr == nil && !reflect.DeepEqual(fast, std) {
			t.Fatalf("results differ for %q:\nfast %+v\nstd  %+v", src, fast, std)
		}
	})
}
