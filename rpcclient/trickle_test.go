package rpcclient

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// A trickle-up goes into the request exactly as read_trickle_files
// writes it: the file's contents inlined on lines of their own.
func TestWriteMsgFromHost(t *testing.T) {
	t.Parallel()
	req := &SchedulerRequest{MsgsFromHost: []MsgFromHost{
		{ResultName: "wu_1_0", Time: 1700000000, Body: "<variety>cpdn</variety>\n<ph>3</ph>"},
		{ResultName: "a&b", Time: 5, Body: "<variety>x</variety>\n"},
	}}
	var buf bytes.Buffer
	if _, err := req.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	want := "  <msg_from_host>\n" +
		"      <result_name>wu_1_0</result_name>\n" +
		"      <time>1700000000</time>\n" +
		"<variety>cpdn</variety>\n<ph>3</ph>\n" +
		"  </msg_from_host>\n" +
		"  <msg_from_host>\n" +
		"      <result_name>a&amp;b</result_name>\n" +
		"      <time>5</time>\n" +
		"<variety>x</variety>\n\n" +
		"  </msg_from_host>\n"
	out := buf.String()
	if !strings.Contains(out, want) {
		t.Fatalf("request lacks the trickles as C++ writes them:\n%s", out)
	}
	// Between the reported results and <app_versions> (PROTOCOLS.md §1.3).
	if i, j := strings.Index(out, "<msg_from_host>"), strings.Index(out, "<app_versions>"); i < 0 || j < i {
		t.Fatalf("msg_from_host not before app_versions:\n%s", out)
	}
}

func reply(body string) string {
	return "<scheduler_reply>\n<scheduler_version>719</scheduler_version>\n" + body + "</scheduler_reply>\n"
}

func TestParseTrickleDown(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("x", MaxTrickleDownBytes+1)
	many := strings.Repeat("<trickle_down>\n<result_name>r</result_name>\n<time>1</time>\nb\n</trickle_down>\n", MaxTrickleDowns+2)
	tests := []struct {
		name        string
		body        string
		want        []TrickleDown
		wantRefused []string // substrings, in order
	}{
		{
			name: "trickle_echo",
			body: "<trickle_down>\n<result_name>wu_1_0</result_name>\n<time>1700000000</time>\n<variety>v</variety>\n<ph>3</ph>\n</trickle_down>\n<message_ack/>\n",
			want: []TrickleDown{{ResultName: "wu_1_0", Time: 1700000000, Body: "<variety>v</variety>\n<ph>3</ph>\n"}},
		},
		{
			// The scheduler writes the row's text unchecked: sloppy markup
			// in it costs neither the message nor the reply.
			name: "sloppy markup",
			body: "<trickle_down>\n      <result_name>r</result_name>\n      <time>7</time>\nline <br> & more\n</trickle_down>\n",
			want: []TrickleDown{{ResultName: "r", Time: 7, Body: "line <br> & more\n"}},
		},
		{
			name: "no time",
			body: "<trickle_down>\n<result_name>r</result_name>\n<cmd>stop</cmd>\n</trickle_down>\n",
			want: []TrickleDown{{ResultName: "r", Time: 0, Body: "<cmd>stop</cmd>\n"}},
		},
		{
			name:        "no result name",
			body:        "<trickle_down>\n<time>7</time>\nx\n</trickle_down>\n",
			wantRefused: []string{"trickle_down #1: no <result_name>"},
		},
		{
			name:        "negative time",
			body:        "<trickle_down>\n<result_name>r</result_name>\n<time>-3</time>\n</trickle_down>\n",
			wantRefused: []string{"trickle_down #1: <time>: negative -3"},
		},
		{
			name: "oversized",
			body: "<trickle_down>\n<result_name>big</result_name>\n" + big + "\n</trickle_down>\n" +
				"<trickle_down>\n<result_name>ok</result_name>\n<time>2</time>\nfine\n</trickle_down>\n",
			want:        []TrickleDown{{ResultName: "ok", Time: 2, Body: "fine\n"}},
			wantRefused: []string{fmt.Sprintf(`trickle_down #1 for task "big": %d bytes, more than the limit of %d`, len(big)+33, MaxTrickleDownBytes)},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := ParseSchedulerReply([]byte(reply(tc.body)))
			if err != nil {
				t.Fatalf("reply refused: %v", err)
			}
			if fmt.Sprint(r.TrickleDowns) != fmt.Sprint(tc.want) {
				t.Errorf("trickle-downs %+v, want %+v", r.TrickleDowns, tc.want)
			}
			if len(r.RefusedTrickleDowns) != len(tc.wantRefused) {
				t.Fatalf("refused %q, want %q", r.RefusedTrickleDowns, tc.wantRefused)
			}
			for i, w := range tc.wantRefused {
				if !strings.Contains(r.RefusedTrickleDowns[i], w) {
					t.Errorf("refusal %q, want %q", r.RefusedTrickleDowns[i], w)
				}
			}
		})
	}
	t.Run("too many", func(t *testing.T) {
		r, err := ParseSchedulerReply([]byte(reply(many)))
		if err != nil {
			t.Fatal(err)
		}
		if len(r.TrickleDowns) != MaxTrickleDowns || len(r.RefusedTrickleDowns) != 2 ||
			!strings.Contains(r.RefusedTrickleDowns[0], fmt.Sprintf("#%d: more than %d", MaxTrickleDowns+1, MaxTrickleDowns)) {
			t.Fatalf("kept %d, refused %q", len(r.TrickleDowns), r.RefusedTrickleDowns)
		}
	})
}

func TestTrickleUpURLs(t *testing.T) {
	reply := "<scheduler_reply>\n<trickle_up_urls>\n<url>https://a.example/t</url>\n<url>https://a.example/t</url>\n" +
		"<url>file:///etc/passwd</url>\n<url> http://b.example/t </url>\n<other/>\n</trickle_up_urls>\n</scheduler_reply>\n"
	r, err := ParseSchedulerReply([]byte(reply))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"https://a.example/t", "http://b.example/t"}; !slices.Equal(r.TrickleUpURLs, want) {
		t.Errorf("TrickleUpURLs %q, want %q", r.TrickleUpURLs, want)
	}
	if len(r.RefusedTrickleUpURLs) != 1 || !strings.Contains(r.RefusedTrickleUpURLs[0], "file:") {
		t.Errorf("refused %q, want the file: URL", r.RefusedTrickleUpURLs)
	}
	body := string(TrickleUpRequest("k<ey", 7, 3, "x86_64-pc-linux-gnu", MsgFromHost{ResultName: "r_1", Time: 42, Body: "<variety>v</variety>\ntext"}))
	for _, want := range []string{"<authenticator>k&lt;ey</authenticator>", "<hostid>7</hostid>", "<rpc_seqno>3</rpc_seqno>",
		"<core_client_release>99</core_client_release>", "<result_name>r_1</result_name>", "<time>42</time>\n<variety>v</variety>\ntext\n    </msg_from_host>"} {
		if !strings.Contains(body, want) {
			t.Errorf("trickle request lacks %q:\n%s", want, body)
		}
	}
}
