package rpcclient

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/boincd/boincd/boinc"
	"github.com/boincd/boincd/platform"
)

const benchN = 1000

func benchRequest() *SchedulerRequest {
	req := fixtureRequest04()
	req.Results = make([]ReportedResult, benchN)
	stderr := strings.Repeat("app: iteration done, checkpoint written\n", 8)
	for i := range req.Results {
		name := fmt.Sprintf("bench_wu_%d_0", i)
		req.Results[i] = ReportedResult{
			Result: &boinc.Result{Name: name, FinalCPUTime: 3600.5, FinalElapsedTime: 3700.25, WireState: 5,
				Platform: platform.LinuxX86_64, VersionNum: 100, PeakWorkingSet: 1724416, PeakDiskUsage: 6205, StderrOut: stderr},
			OutputFiles: []*boinc.FileInfo{{Name: name + "_r1_0", NBytes: 86, MaxNBytes: 65536,
				MD5: "b351e64117fecd13f028009656b05c18", UploadURLs: []string{"http://127.0.0.1:18080/cgi-bin/file_upload_handler"}}},
			AppVersionNum: 100,
			PeakSwapSize:  2990080,
		}
	}
	return req
}

func benchReply() []byte {
	var b bytes.Buffer
	head := readFixtureB("scheduler/01_reply_first_contact_with_work.xml")
	i := bytes.Index(head, []byte("<file_info>"))
	b.Write(head[:i])
	const sig = "a84dad895dd0cebc9682de1929c6fc1b3f2ff021f8edb2c05024639cca66f377\nad5516084c94f35ee0f4bd3c4323b22f32bcaffabd59609f7f6fde2ba250e11d\n00fa32c255949fab10db2cea4db7df77699eb0d44fb9ba0693ba459f6725c8b1\n8ff6de74411b884f29d7b5dc34f18776e0aa9af69add6279430fa6a652fe038f\n.\n"
	for n := 0; n < benchN; n++ {
		fmt.Fprintf(&b, `<file_info>
    <name>bench_wu_%[1]d_in</name>
    <url>http://127.0.0.1:18080/download/bench_wu_%[1]d_in</url>
    <nbytes>1035</nbytes>
    <md5_cksum>f425a2c4e0dffca0b56c8fa1a44d85ae</md5_cksum>
</file_info>
<workunit>
    <name>bench_wu_%[1]d</name>
    <app_name>refapp</app_name>
    <version_num>100</version_num>
    <command_line>--seconds 30</command_line>
    <rsc_fpops_est>3.000000e+10</rsc_fpops_est>
    <rsc_fpops_bound>1.000000e+13</rsc_fpops_bound>
    <rsc_memory_bound>1.000000e+08</rsc_memory_bound>
    <rsc_disk_bound>1.000000e+08</rsc_disk_bound>
    <file_ref>
        <file_name>bench_wu_%[1]d_in</file_name>
        <open_name>in</open_name>
    </file_ref>
</workunit>
<file_info>
    <name>bench_wu_%[1]d_0_r1_0</name>
    <generated_locally/>
    <upload_when_present/>
    <max_nbytes>65536</max_nbytes>
    <url>http://127.0.0.1:18080/cgi-bin/file_upload_handler</url>
<xml_signature>
%[2]s</xml_signature>
</file_info>
<result>
    <name>bench_wu_%[1]d_0</name>
    <wu_name>bench_wu_%[1]d</wu_name>
    <report_deadline>1795873355</report_deadline>
    <platform>x86_64-pc-linux-gnu</platform>
    <version_num>100</version_num>
    <file_ref>
        <file_name>bench_wu_%[1]d_0_r1_0</file_name>
        <open_name>out</open_name>
        <copy_file/>
    </file_ref>
</result>
<result_ack>
    <name>bench_old_%[1]d_0</name>
</result_ack>
`, n, sig)
	}
	b.WriteString("</scheduler_reply>\n")
	return b.Bytes()
}

func readFixtureB(rel string) []byte {
	b, err := readFixtureErr(rel)
	if err != nil {
		panic(err)
	}
	return b
}

func checkBenchReply(b *testing.B, r *SchedulerReply) {
	if len(r.Results) != benchN || len(r.Workunits) != benchN || len(r.FileInfos) != 2*benchN || len(r.ResultAcks) != benchN {
		b.Fatalf("bench reply parsed wrongly: %d results", len(r.Results))
	}
}

func BenchmarkWriteRequest1000(b *testing.B) {
	req := benchRequest()
	var buf bytes.Buffer
	n, _ := req.WriteTo(&buf)
	b.SetBytes(n)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := req.WriteTo(io.Discard); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseReply1000(b *testing.B) {
	data := benchReply()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		r, err := ParseSchedulerReply(data)
		if err != nil {
			b.Fatal(err)
		}
		checkBenchReply(b, r)
	}
}

func BenchmarkSchedulerRoundTrip(b *testing.B) {
	req := benchRequest()
	data := benchReply()
	var buf bytes.Buffer
	b.ReportAllocs()
	for b.Loop() {
		buf.Reset()
		if _, err := req.WriteTo(&buf); err != nil {
			b.Fatal(err)
		}
		r, err := ParseSchedulerReply(data)
		if err != nil {
			b.Fatal(err)
		}
		checkBenchReply(b, r)
	}
}
