package client

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// fuzzReplies returns the client → boinccmd reply streams of the BOINC
// 7.20 captures, one message each, found upwards from the package
// directory in testdata/ at the module root.
func fuzzReplies() [][]byte {
	dir, _ := os.Getwd()
	for range 6 {
		names, _ := filepath.Glob(filepath.Join(dir, "testdata", "boinc-7.20", "guirpc", "*.s2c.bin"))
		if len(names) > 0 {
			var out [][]byte
			for _, n := range names {
				b, err := os.ReadFile(n)
				if err != nil {
					continue
				}
				for _, m := range bytes.Split(b, []byte{3}) {
					if len(bytes.TrimSpace(m)) > 0 {
						out = append(out, m)
					}
				}
			}
			return out
		}
		dir = filepath.Dir(dir)
	}
	return nil
}

// FuzzDecodeReplies: a GUI RPC server (or whatever answers on its port)
// can send anything. Every decoder the client has must return a value or
// an error for any reply, never panic.
func FuzzDecodeReplies(f *testing.F) {
	for _, m := range fuzzReplies() {
		f.Add(m)
	}
	for _, s := range []string{
		"<boinc_gui_rpc_reply>\n<error>no &amp; such</error>\n</boinc_gui_rpc_reply>\n",
		"<?xml version=\"1.0\"?><boinc_gui_rpc_reply><unauthorized/></boinc_gui_rpc_reply>",
		"<boinc_gui_rpc_reply><client_state><project><master_url>http://a/</master_url><rsc_backoff_time><name>NVIDIA</name><value>1e300</value></rsc_backoff_time></project>" +
			"<result><name>r&#1;</name><state>nan</state><active_task><fraction_done>inf</fraction_done></active_task></result></client_state></boinc_gui_rpc_reply>",
		"<boinc_gui_rpc_reply><msgs><msg><body><![CDATA[\xff]]></body><time>-1e400</time><seqno>9223372036854775808</seqno></msg></msgs></boinc_gui_rpc_reply>",
		"<boinc_gui_rpc_reply><results><result></results></boinc_gui_rpc_reply>",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		body, err := unwrapReply(raw)
		if err != nil {
			body = raw // the decoders also get bodies from the HTTP variant
		}
		_ = replyError("fuzz", body)
		_, _ = elementText(body, "nonce")
		if st, err := parseState(body); err == nil && st == nil {
			t.Fatal("parseState: no state and no error")
		}
		_, _ = decodeList(body, "results", "result", (*wireResult).result)
		_, _ = decodeList(body, "projects", "project", (*wireProject).project)
		_, _ = decodeList(body, "msgs", "msg", (*wireMessage).message)
		_, _ = decodeList(body, "file_transfers", "file_transfer", (*wireFileTransfer).transfer)
		if w, err := decodeOne[wireCCStatus](body, "cc_status"); err == nil {
			_ = w.status()
		}
		if w, err := decodeOne[wireHostInfo](body, "host_info"); err == nil {
			_ = w.hostInfo()
		}
		_, _ = decodeOne[wireVersion](body, "server_version")
	})
}

// boincEscape is lib/str_util.cpp xml_escape as the C++ client (and
// boincd's server) applies it to names and messages: the XML specials as
// entities and control bytes as decimal character references.
func boincEscape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '&':
			b.WriteString("&amp;")
		case c == '<':
			b.WriteString("&lt;")
		case c == '>':
			b.WriteString("&gt;")
		case c == '"':
			b.WriteString("&quot;")
		case c == '\'':
			b.WriteString("&apos;")
		case c < 0x20 || c == 0x7f:
			fmt.Fprintf(&b, "&#%d;", c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// FuzzEscapedNames: whatever a task or project is called, the reply the
// C++ client (or boincd) writes for it decodes, and the name comes back
// as sent, up to bytes that are not UTF-8 and control bytes XML cannot
// carry.
func FuzzEscapedNames(f *testing.F) {
	for _, s := range []string{"refwu_1_0", "a&b<c>\"d'", "tab\there", "bell\x07", "nul\x00", "caf\u00e9", "\xff", "&#1;", "]]>"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		reply := "<boinc_gui_rpc_reply>\n<results>\n<result>\n    <name>" + boincEscape(name) +
			"</name>\n    <state>2</state>\n</result>\n</results>\n</boinc_gui_rpc_reply>\n\x03"
		body, err := unwrapReply([]byte(strings.TrimSuffix(reply, "\x03")))
		if err != nil {
			t.Fatal(err)
		}
		rs, err := decodeList(body, "results", "result", (*wireResult).result)
		if err != nil || len(rs) != 1 {
			t.Fatalf("reply for name %q: %d results, %v", name, len(rs), err)
		}
		// Compared without what XML cannot carry (control bytes, bytes
		// that are not UTF-8: both arrive as U+FFFD) and without the
		// surrounding blanks the decoder trims.
		norm := func(s string) string {
			return strings.TrimSpace(strings.Map(func(r rune) rune {
				if r < 0x20 && r != '\t' && r != '\n' && r != '\r' || r == 0x7f || r == utf8.RuneError {
					return -1
				}
				return r
			}, strings.ToValidUTF8(s, "\uFFFD")))
		}
		got, want := norm(rs[0].Name), norm(name)
		if got != want {
			t.Fatalf("name %q came back as %q", name, rs[0].Name)
		}
	})
}
