package rpcclient

import (
	"runtime"
	"strings"
	"testing"
)

// hostileBodies are replies of up to 16 MiB (the default reply cap) built
// to make a parser allocate: each must be refused (or parsed) with total
// allocation under a small multiple of its size.
func hostileBodies() []struct {
	name, body, wantErr string
} {
	const size = 16 << 20
	fill := func(unit string) string { return strings.Repeat(unit, size/len(unit)) }
	return []struct{ name, body, wantErr string }{
		{"attributes", "<scheduler_reply><x" + fill(` a=""`) + "/></scheduler_reply>", "more than 32 attributes"},
		{"attributes after a CR (std path)", "<scheduler_reply>\r<x" + fill(` a=""`) + "/></scheduler_reply>", "more than 32 attributes"},
		{"nesting", "<scheduler_reply>" + fill("<a>") + "</scheduler_reply>", "nested deeper than 64"},
		{"DTD", "<scheduler_reply><!DOCTYPE x [" + fill(`<!ENTITY a "b">`) + "]></scheduler_reply>", "DTDs"},
		{"results", "<scheduler_reply>" + fill("<result><name>r</name><wu_name>w</wu_name></result>") + "</scheduler_reply>", "more than 10000 <result>"},
		{"acks", "<scheduler_reply>" + fill("<result_ack><name>r</name></result_ack>") + "</scheduler_reply>", "more than 10000 <result_ack>"},
		{"messages", "<scheduler_reply>" + fill("<message>m</message>") + "</scheduler_reply>", ""},
		{"unknown elements", "<scheduler_reply>" + fill("<x/>") + "</scheduler_reply>", ""},
		{"text", "<scheduler_reply><project_name>" + fill("&amp;") + "</project_name></scheduler_reply>", ""},
	}
}

// TestHostileReplyMemory measures, for each hostile body, what the
// parsed reply retains (live heap after a GC, bounded by twice the body
// size plus 1 MiB) and what parsing allocated in total, garbage included
// (bounded by 32 times the body: every token of encoding/xml's Token
// interface is boxed, ~96 bytes for a 4-byte <x/>). Neither is a timing.
func TestHostileReplyMemory(t *testing.T) {
	for _, tc := range hostileBodies() {
		t.Run(tc.name, func(t *testing.T) {
			body := []byte(tc.body)
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			r, err := ParseSchedulerReply(body)
			runtime.ReadMemStats(&after)
			alloc := after.TotalAlloc - before.TotalAlloc
			runtime.GC()
			runtime.ReadMemStats(&after)
			var live uint64
			if after.HeapAlloc > before.HeapAlloc {
				live = after.HeapAlloc - before.HeapAlloc
			}
			runtime.KeepAlive(r)
			t.Logf("%d MiB body: retained %.1f MiB, allocated %.1f MiB in total, err %v", len(body)>>20, float64(live)/(1<<20), float64(alloc)/(1<<20), err)
			if limit := uint64(2*len(body) + 1<<20); live > limit {
				t.Errorf("retained %d bytes after parsing a %d-byte reply; bound %d", live, len(body), limit)
			}
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if len(r.Messages) > MaxReplyMessages {
					t.Errorf("%d messages kept, limit %d", len(r.Messages), MaxReplyMessages)
				}
			} else if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error %v, want %q", err, tc.wantErr)
			}
			if limit := uint64(32 * len(body)); alloc > limit {
				t.Errorf("allocated %d bytes parsing a %d-byte reply; bound %d", alloc, len(body), limit)
			}
		})
	}
}

func TestCheckMarkup(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"plain", "<a><b x='1' y=\"2\">t</b><c/></a>", ""},
		{"depth at the limit", strings.Repeat("<a>", MaxReplyDepth) + strings.Repeat("</a>", MaxReplyDepth), ""},
		{"depth over", strings.Repeat("<a>", MaxReplyDepth+1), "nested deeper"},
		{"self-closing does not nest", strings.Repeat("<a/>", 1000), ""},
		{"attrs at the limit", "<a" + strings.Repeat(" b=''", MaxReplyAttrs) + "/>", ""},
		{"attrs over", "<a" + strings.Repeat(" b=''", MaxReplyAttrs+1) + "/>", "more than 32 attributes"},
		{"= inside a quoted value", `<a b="=====================================================================">`, ""},
		{"comment and CDATA hide markup", "<a><!-- <!DOCTYPE x> --><![CDATA[<!ENTITY " + strings.Repeat("<b>", 100) + "]]></a>", ""},
		{"doctype", "<a><!DOCTYPE a></a>", "DTDs"},
		{"end tags below zero", strings.Repeat("</a>", 100) + strings.Repeat("<a>", MaxReplyDepth), ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := checkMarkup([]byte(tc.in))
			if (err == nil) != (tc.want == "") || err != nil && !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("checkMarkup = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestReplyNumberAndURLChecks(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"file url", `<file_info><name>a</name><url>file:///etc/passwd</url></file_info>`, `scheme "file" is not http or https`},
		{"ftp download_url", `<file_info><name>a</name><download_url>ftp://x/a</download_url></file_info>`, `scheme "ftp"`},
		{"upload url without host", `<file_info><name>a</name><upload_url>http:///up</upload_url></file_info>`, "no host"},
		{"huge nbytes", `<file_info><name>a</name><nbytes>1e300</nbytes></file_info>`, "<nbytes> 1e+300 out of range"},
		{"ftp gzipped_url", `<file_info><name>a</name><gzipped_url>ftp://x/a.gz</gzipped_url></file_info>`, `<gzipped_url> "ftp://x/a.gz": scheme "ftp"`},
		{"negative gzipped_nbytes", `<file_info><name>a</name><gzipped_nbytes>-1</gzipped_nbytes></file_info>`, "<gzipped_nbytes> -1"},
		{"huge gzipped_nbytes", `<file_info><name>a</name><gzipped_nbytes>1e300</gzipped_nbytes></file_info>`, "<gzipped_nbytes> 1e+300 out of range"},
		{"duplicate file", `<file_info><name>a</name><md5_cksum>1</md5_cksum></file_info><file_info><name>a</name><md5_cksum>2</md5_cksum></file_info>`, "given twice"},
		{"app name", `<app><name>../a</name></app>`, `app #1 "../a"`},
		{"delete", `<delete_file_info>/etc/passwd</delete_file_info>`, "delete_file_info"},
		{"negative hostid", `<hostid>-1</hostid>`, "negative"},
		{"next_rpc_delay", `<next_rpc_delay>1e12</next_rpc_delay>`, "<next_rpc_delay> 1e+12 out of range"},
		{"avg_ncpus", `<app_version><app_name>a</app_name><avg_ncpus>1e9</avg_ncpus></app_version>`, "<avg_ncpus>"},
		{"memory bound", `<workunit><name>w</name><app_name>a</app_name><rsc_memory_bound>1e300</rsc_memory_bound></workunit>`, "<rsc_memory_bound>"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseSchedulerReply([]byte("<scheduler_reply>" + tc.in + "</scheduler_reply>"))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
	r, err := ParseSchedulerReply([]byte(`<scheduler_reply><file_info><name>a</name><md5_cksum>1</md5_cksum></file_info><file_info><name>a</name><md5_cksum>1</md5_cksum></file_info>` +
		`<result><name>r</name><wu_name>w</wu_name><report_deadline>1e300</report_deadline></result></scheduler_reply>`))
	if err != nil {
		t.Fatal(err)
	}
	if len(r.FileInfos) != 1 {
		t.Errorf("identical duplicate kept %d times", len(r.FileInfos))
	}
	if y := r.Results[0].ReportDeadline.Year(); y != 9999 {
		t.Errorf("deadline 1e300 clamped to year %d, want 9999", y)
	}
}

func TestCheckSchedulerURL(t *testing.T) {
	for u, ok := range map[string]bool{"http://x/cgi": true, "https://x:8443/cgi": true, "file:///etc/passwd": false,
		"javascript:alert(1)": false, "gopher://x/": false, "//x/cgi": false, "http://": false} {
		if err := CheckSchedulerURL(u); (err == nil) != ok {
			t.Errorf("CheckSchedulerURL(%q) = %v", u, err)
		}
	}
}
