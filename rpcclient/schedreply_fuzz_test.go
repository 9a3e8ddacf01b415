package rpcclient

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/boincd/boincd/boinc"
)

// FuzzSchedulerReplyContract adds to FuzzParseSchedulerReply (which
// checks file_info names) what the daemon relies on when it acts on a
// reply: an error always says "scheduler reply: " and what broke; parsing
// is deterministic; every file reference the daemon will turn into a path
// (app version files, workunit inputs, result outputs) is a safe name;
// the delays fit a time.Duration. It is seeded with every capture,
// requests included, since they share most of the vocabulary.
func FuzzSchedulerReplyContract(f *testing.F) {
	if names, _ := filepath.Glob(filepath.Join(fixtureDir, "scheduler", "*.xml")); len(names) > 0 {
		for _, n := range names {
			if b, err := os.ReadFile(n); err == nil {
				f.Add(b)
			}
		}
	}
	for _, b := range realServerReplies(f) {
		f.Add(b)
	}
	for _, s := range []string{
		"<scheduler_reply><request_delay>1e300</request_delay><next_rpc_delay>-1</next_rpc_delay></scheduler_reply>",
		"<scheduler_reply><app_version><app_name>a</app_name><version_num>1</version_num><file_ref><file_name>../x</file_name></file_ref></app_version></scheduler_reply>",
		"<scheduler_reply><workunit><name>w</name><app_name>a</app_name><file_ref><file_name>in</file_name><open_name>sub/in</open_name></file_ref></workunit></scheduler_reply>",
		"<scheduler_reply><result><name>r</name><wu_name>w</wu_name><file_ref><file_name>o</file_name><open_name>/abs</open_name></file_ref></result></scheduler_reply>",
		"Content-type: text/xml\n\n<?xml version=\"1.0\"?>\n<scheduler_reply>\n<result_ack><name>r</name></result_ack>\n</scheduler_reply>\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := ParseSchedulerReply(data)
		r2, err2 := ParseSchedulerReply(data)
		if (err == nil) != (err2 == nil) || !reflect.DeepEqual(r, r2) {
			t.Fatalf("two parses differ: %v / %v", err, err2)
		}
		if err != nil {
			if r != nil || !strings.HasPrefix(err.Error(), "scheduler reply: ") || err.Error() != err2.Error() {
				t.Fatalf("error %q (reply %v)", err, r != nil)
			}
			return
		}
		refs := func(what string, rs []boinc.FileRef) {
			for _, fr := range rs {
				if boinc.ValidateFileName(fr.FileName, false) != nil {
					t.Fatalf("%s file_name %q accepted", what, fr.FileName)
				}
				if fr.OpenName != "" && boinc.ValidateFileName(fr.OpenName, true) != nil {
					t.Fatalf("%s open_name %q accepted", what, fr.OpenName)
				}
			}
		}
		for _, v := range r.AppVersions {
			refs("app_version", v.FileRefs)
		}
		for _, w := range r.Workunits {
			refs("workunit", w.InputFiles)
		}
		for _, res := range r.Results {
			refs("result", res.OutputFiles)
		}
		delays := []float64{r.RequestDelay}
		if r.NextRPCDelay != nil {
			delays = append(delays, *r.NextRPCDelay)
		}
		for _, d := range delays {
			if d > 0 && time.Duration(d*float64(time.Second)) <= 0 {
				t.Fatalf("delay %v s does not fit a time.Duration", d)
			}
		}
	})
}
