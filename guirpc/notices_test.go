package guirpc

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"
)

// noticeBackend is a fakeBackend that also keeps notices.
type noticeBackend struct {
	fakeBackend
	nmu  sync.Mutex
	list NoticeList
}

func (b *noticeBackend) Notices(context.Context) (*NoticeList, error) {
	b.nmu.Lock()
	defer b.nmu.Unlock()
	cp := b.list
	cp.Notices = append([]Notice(nil), b.list.Notices...)
	return &cp, nil
}

func (b *noticeBackend) set(removals uint64, ns ...Notice) {
	b.nmu.Lock()
	defer b.nmu.Unlock()
	b.list = NoticeList{Notices: ns, Removals: removals}
}

// A scheduler notice as the C++ client 7.20.5 wrote it in reply to
// get_notices (captured against the in-repo test project).
const cppSchedulerNotice = `<notice>
   <title></title>
   <description><![CDATA[
Please <b>update</b> & read
]]></description>
   <create_time>1795634272.921997</create_time>
   <arrival_time>1795634272.921997</arrival_time>
   <is_private>0</is_private>
   <project_name>probe</project_name>
   <category>scheduler</category>
   <link><![CDATA[]]></link>
   <seqno>2</seqno>
</notice>
`

func TestWriteNoticeAsCpp(t *testing.T) {
	at := time.UnixMicro(1795634272921997)
	var w xw
	writeNotice(&w, &Notice{Seqno: 2, Description: "Please <b>update</b> & read", CreateTime: at, ArrivalTime: at,
		ProjectName: "probe", Category: "scheduler"})
	if w.String() != cppSchedulerNotice {
		t.Errorf("got\n%s\nwant\n%s", w.String(), cppSchedulerNotice)
	}
	w.Reset()
	writeNotice(&w, &Notice{Seqno: 3, Title: "a < b & c", Description: "x ]]> y", Link: "http://l/?a=1&b=2", Private: true})
	for _, want := range []string{
		"   <title>a &lt; b &amp; c</title>\n",
		"   <description><![CDATA[\nx ]]]]><![CDATA[> y\n]]></description>\n",
		"   <is_private>1</is_private>\n",
		"   <link><![CDATA[http://l/?a=1&b=2]]></link>\n",
		"   <create_time>0.000000</create_time>\n",
	} {
		if !strings.Contains(w.String(), want) {
			t.Errorf("missing %q in\n%s", want, w.String())
		}
	}
}

func seqnosIn(reply string) []string {
	var out []string
	for _, l := range strings.Split(reply, "\n") {
		if s, ok := strings.CutPrefix(l, "   <seqno>"); ok {
			out = append(out, strings.TrimSuffix(s, "</seqno>"))
		}
	}
	return out
}

func TestGetNotices(t *testing.T) {
	b := &noticeBackend{fakeBackend: fakeBackend{st: richState()}}
	b.set(0,
		Notice{Seqno: 1, Description: "one", Category: "client"},
		Notice{Seqno: 2, Description: "two", Private: true},
		Notice{Seqno: 3, Description: "three", Category: "scheduler"})
	srv := startServer(t, Config{Backend: b, Password: "pw"})
	a := dial(t, srv)
	a.auth("pw")
	get := func(cl *client, op, seqno string) string {
		t.Helper()
		return strings.Join(seqnosIn(cl.call("<"+op+">\n<seqno>"+seqno+"</seqno>\n</"+op+">")), " ")
	}
	steps := []struct {
		name, op, seqno, want string
		cl                    *client
	}{
		{"all, oldest first", "get_notices", "0", "1 2 3", a},
		{"newer than 1", "get_notices", "1", "2 3", a},
		{"public leaves out private ones", "get_notices_public", "0", "1 3", a},
		{"nothing newer", "get_notices", "3", "", a},
	}
	for _, s := range steps {
		if got := get(s.cl, s.op, s.seqno); got != s.want {
			t.Errorf("%s: seqnos %q, want %q", s.name, got, s.want)
		}
	}
	// A removal: the connection that read before gets the marker and
	// everything, once; a new connection has nothing to drop.
	b.set(1, Notice{Seqno: 1, Description: "one", Category: "client"}, Notice{Seqno: 4, Description: "four"})
	fresh := dial(t, srv)
	fresh.auth("pw")
	if got := get(fresh, "get_notices", "3"); got != "4" {
		t.Errorf("new connection after a removal: %q, want 4", got)
	}
	if got := get(a, "get_notices", "3"); got != "-1 1 4" {
		t.Errorf("after a removal: %q, want the refresh marker and all notices", got)
	}
	if got := get(a, "get_notices", "4"); got != "" {
		t.Errorf("after the refresh: %q, want nothing", got)
	}
	if got := get(fresh, "get_notices", "4"); got != "" {
		t.Errorf("new connection again: %q", got)
	}
	r := a.call("<get_notices>\n<seqno>0</seqno>\n</get_notices>")
	if !strings.HasPrefix(r, "<boinc_gui_rpc_reply>\n<notices>\n<notice>\n   <title></title>\n") || !strings.HasSuffix(r, "</notice>\n</notices>\n</boinc_gui_rpc_reply>\n") {
		t.Errorf("reply layout:\n%s", r)
	}
}

// A backend without notices answers an empty list, as a C++ client that
// has none.
func TestGetNoticesNone(t *testing.T) {
	srv := startServer(t, Config{Backend: &fakeBackend{st: richState()}})
	if got := dial(t, srv).call("<get_notices>\n<seqno>0</seqno>\n</get_notices>"); !strings.Contains(got, "<notices>\n</notices>\n") {
		t.Errorf("reply %q", got)
	}
}
