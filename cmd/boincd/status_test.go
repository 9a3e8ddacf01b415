package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/boincd/boincd/guirpc/client"
)

const guiFixtures = "../../guirpc/client/testdata"

// opServer answers GUI RPC requests by op name with canned reply frames,
// so the command may ask in any order. Unknown ops get
// <error>unrecognized op</error>, like the C++ client.
type opServer struct {
	ln      net.Listener
	replies map[string][]byte
	mu      sync.Mutex
	ops     []string
	served  chan string // every op served, when non-nil
	// closeAfter closes the connection after serving this op (as a
	// server closes an idle one).
	closeAfter string
	wg         sync.WaitGroup
}

// lastFrame is the final reply of a capture (the op's, after auth1/auth2).
func lastFrame(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(guiFixtures, name+".s2c.bin"))
	if err != nil {
		t.Fatal(err)
	}
	frames := bytes.SplitAfter(b, []byte{3})
	for i := len(frames) - 1; i >= 0; i-- {
		if len(frames[i]) > 0 {
			return frames[i]
		}
	}
	t.Fatalf("%s: empty capture", name)
	return nil
}

func firstFrame(t *testing.T, name string, n int) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(guiFixtures, name+".s2c.bin"))
	if err != nil {
		t.Fatal(err)
	}
	return bytes.SplitAfter(b, []byte{3})[n]
}

func replyFrame(body string) []byte {
	return []byte("<boinc_gui_rpc_reply>\n" + body + "\n</boinc_gui_rpc_reply>\n\003")
}

// fixtureReplies is a host with 2 tasks executing and 1 downloading
// (captured get_state), CPU suspended because the CPU is busy (captured
// get_cc_status), no transfers, and the captured event log.
func fixtureReplies(t *testing.T) map[string][]byte {
	return map[string][]byte{
		"auth1":              firstFrame(t, "get_state", 0),
		"auth2":              firstFrame(t, "get_state", 1),
		"exchange_versions":  lastFrame(t, "exchange_versions"),
		"get_state":          lastFrame(t, "get_state_2executing_1downloading"),
		"get_cc_status":      lastFrame(t, "get_cc_status"),
		"get_file_transfers": lastFrame(t, "get_file_transfers"),
		"get_messages":       lastFrame(t, "get_messages"),
		"get_message_count":  lastFrame(t, "get_message_count"),
		"get_results":        lastFrame(t, "get_results"),
		"get_project_status": lastFrame(t, "get_project_status"),
	}
}

func startOpServer(t *testing.T, replies map[string][]byte) *opServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &opServer{ln: ln, replies: replies}
	var conns []net.Conn
	var cmu sync.Mutex
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			cmu.Lock()
			conns = append(conns, c)
			cmu.Unlock()
			s.wg.Add(1)
			go s.handle(c)
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		cmu.Lock()
		for _, c := range conns {
			_ = c.Close()
		}
		cmu.Unlock()
		s.wg.Wait()
	})
	return s
}

var opRE = regexp.MustCompile(`<boinc_gui_rpc_request>\s*<([a-z_0-9]+)`)

func (s *opServer) handle(c net.Conn) {
	defer s.wg.Done()
	defer c.Close()
	r := bufio.NewReader(c)
	for {
		req, err := r.ReadBytes(3)
		if err != nil {
			return
		}
		op := "?"
		if m := opRE.FindSubmatch(req); m != nil {
			op = string(m[1])
		}
		s.mu.Lock()
		s.ops = append(s.ops, op)
		reply, ok := s.replies[op]
		s.mu.Unlock()
		if !ok {
			reply = replyFrame("<error>unrecognized op: " + op + "</error>")
		}
		if _, err := c.Write(reply); err != nil {
			return
		}
		if s.served != nil {
			s.served <- op
		}
		if op == s.closeAfter {
			return
		}
	}
}

func (s *opServer) opsSeen() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.ops...)
}

func runStatusCmd(t *testing.T, ctx context.Context, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := statusMain(ctx, args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestStatusFixtureText(t *testing.T) {
	s := startOpServer(t, fixtureReplies(t))
	dir := t.TempDir()
	code, out, errs := runStatusCmd(t, context.Background(), "--host", s.ln.Addr().String(), "--dir", dir)
	if code != 0 {
		t.Fatalf("exit %d, stderr %s", code, errs)
	}
	t.Logf("output:\n%s", out)
	for _, want := range []string{
		"BOINC client 7.20.5 at " + s.ln.Addr().String() + " (x86_64-pc-linux-gnu, host vm, 2 CPUs)",
		"network: don't need connection",
		"CPU:     according to prefs; suspended: CPU is busy",
		"GPU:     according to prefs; not suspended",
		"PROJECTS (1)",
		"BOINC Reference Fake Project",
		"http://127.0.0.1:18080/",
		"3 (0 running)",
		"backoff 4s", // min_rpc_time 3.6 s after the state's "now"
		"TASKS (3)",
		"refwu_1795268042_1_0",
		"suspended", // executing, but the CPU is suspended (busy)
		"refwu_1795268042_3_0",
		"downloading",
		"[--------------------]   0.0%",
		"0:00:11", // elapsed of task 1
		"0:01:24", // time left of task 1 (83.5 s)
		"(in 6d 23h)",
		"TRANSFERS (0)",
		"Docker:  none: none reported",
		"WHY NO WORK IS BEING FETCHED",
		`no "not requesting work" messages`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if got := s.opsSeen(); strings.Join(got, ",") != "get_cc_status,get_state,get_file_transfers,get_messages" {
		t.Errorf("ops %v (no password: no auth expected)", got)
	}
}

// TestStatusSynthetic covers what the captures lack: running tasks with
// progress, transfers, project flags and "not requesting work" messages in
// boincd's and the C++ client's wording.
func TestStatusSynthetic(t *testing.T) {
	replies := fixtureReplies(t)
	state := string(lastFrame(t, "get_state_2executing_1downloading"))
	state = strings.Replace(state, "<fraction_done>0.000000</fraction_done>", "<fraction_done>0.420000</fraction_done>", 1)
	state = strings.Replace(state, "<last_rpc_time>", "<suspended_via_gui/>\n<dont_request_more_work>1</dont_request_more_work>\n<detach_when_done>0</detach_when_done>\n<last_rpc_time>", 1)
	state = strings.Replace(state, "<nrpc_failures>0</nrpc_failures>", "<nrpc_failures>2</nrpc_failures>", 1)
	replies["get_state"] = []byte(state)
	replies["get_cc_status"] = lastFrame(t, "get_cc_status_always")
	replies["get_file_transfers"] = replyFrame(`<file_transfers>
<file_transfer>
    <project_url>http://127.0.0.1:18080/</project_url>
    <project_name>BOINC Reference Fake Project</project_name>
    <name>refwu_1795268042_1_0_r1_out</name>
    <nbytes>3145728.000000</nbytes>
    <status>0</status>
    <persistent_file_xfer>
        <num_retries>3</num_retries>
        <next_request_time>1795268666.000000</next_request_time>
        <is_upload>1</is_upload>
    </persistent_file_xfer>
</file_transfer>
</file_transfers>`)
	msg := func(seq int, project, body string, tm int) string {
		return "<msg>\n <project>" + project + "</project>\n <pri>1</pri>\n <seqno>" + strconv.Itoa(seq) + "</seqno>\n <body><![CDATA[\n" + body + "\n]]></body>\n <time>" + strconv.Itoa(tm) + "</time>\n</msg>\n"
	}
	const p = "BOINC Reference Fake Project"
	replies["get_messages"] = replyFrame("<msgs>\n" +
		msg(1, p, `Not requesting work resource=CPU reason="job cache full"`, 1795268000) +
		msg(2, "Other Project", "Not requesting tasks: don't need", 1795268001) +
		msg(3, p, `Not requesting work resource=NVIDIA reason="no applications for this resource"`, 1795268002) +
		msg(4, p, `Sending scheduler request reason="To fetch work" cpu_req_secs=3600 reporting=0`, 1795268003) +
		msg(5, p, `Not requesting work resource=CPU reason="project is suspended"`, 1795268060) +
		msg(6, "Third", "Not requesting tasks: some download is stalled", 1795268010) +
		msg(7, "Third", "Requesting new tasks for CPU and NVIDIA GPU", 1795268011) +
		msg(8, "http://127.0.0.1:18080/", `Not requesting work resource=ATI reason="GPU excluded by cc_config"`, 1795268066) +
		// Two reads of the config files: the newer table wins.
		msg(9, "", `Config sources set=1 files="/var/lib/boincd/boincd.toml, /var/lib/boincd/cc_config.xml"`, 1795268000) +
		msg(10, "", `Config setting name=ncpus value=4 source=cc_config.xml`, 1795268000) +
		msg(11, "", `Config sources set=2 files="/var/lib/boincd/boincd.toml, /var/lib/boincd/cc_config.xml"`, 1795268050) +
		msg(12, "", `Config setting name=ncpus value=2 source=cc_config.xml`, 1795268050) +
		msg(13, "", `Config setting name=no_gpus value=true source="command line"`, 1795268050) +
		msg(14, "", `Docker: not usable: podman not installed; docker not installed`, 1795268050) +
		"</msgs>")
	s := startOpServer(t, replies)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "gui_rpc_auth.cfg"), []byte("refguipass\nignored\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runStatusCmd(t, context.Background(), "--host", s.ln.Addr().String(), "--dir", dir)
	if code != 0 {
		t.Fatalf("exit %d, stderr %s", code, errs)
	}
	t.Logf("output:\n%s", out)
	for _, want := range []string{
		"CPU:     always for 1h 0m, then according to prefs; not suspended",
		"suspended, no new tasks, backoff 4s, 2 RPC failures",
		"3 (2 running)",
		"running",
		"[########------------]  42.0%",
		"refwu_1795268042_1_0_r1_out",
		"up",
		"0 B / 3.0 MiB",
		"in 10m 0s",
		"CPU     project is suspended (6s ago)",
		"NVIDIA  no applications for this resource",
		"Other Project",
		"all     don't need",
		"BOINC Reference Fake Project  ATI     GPU excluded by cc_config (just now)\n  BOINC Reference Fake Project  CPU",
		"CONFIG (set values and where they came from; everything else is the default)\n  ncpus    2     cc_config.xml\n  no_gpus  true  command line\n",
		"  Docker:  none: not usable: podman not installed; docker not installed\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if strings.Contains(out, "job cache full") || strings.Contains(out, "download is stalled") {
		t.Error("superseded not-requesting messages are shown")
	}
	if got := s.opsSeen(); len(got) < 2 || got[0] != "auth1" || got[1] != "auth2" {
		t.Errorf("ops %v: want auth with the password from gui_rpc_auth.cfg", got)
	}
}

func TestStatusJSON(t *testing.T) {
	s := startOpServer(t, fixtureReplies(t))
	code, out, errs := runStatusCmd(t, context.Background(), "--host", s.ln.Addr().String(), "--dir", t.TempDir(), "--json")
	if code != 0 {
		t.Fatalf("exit %d, stderr %s", code, errs)
	}
	var doc struct {
		Client struct {
			Version string `json:"version"`
			NCPUs   int    `json:"ncpus"`
		} `json:"client"`
		CPU struct {
			Mode           string   `json:"mode"`
			Suspended      bool     `json:"suspended"`
			SuspendReason  int      `json:"suspend_reason"`
			SuspendReasons []string `json:"suspend_reasons"`
		} `json:"cpu"`
		Projects []struct {
			Name          string   `json:"name"`
			Tasks         int      `json:"tasks"`
			DeferredUntil string   `json:"deferred_until"`
			Status        []string `json:"status"`
		} `json:"projects"`
		Tasks []struct {
			Name          string  `json:"name"`
			State         string  `json:"state"`
			ResultState   string  `json:"result_state"`
			ElapsedSecs   float64 `json:"elapsed_secs"`
			RemainingSecs float64 `json:"remaining_secs"`
			Slot          int     `json:"slot"`
			Deadline      string  `json:"deadline"`
		} `json:"tasks"`
		Transfers   []json.RawMessage `json:"transfers"`
		NotFetching []json.RawMessage `json:"not_fetching"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("bad JSON: %v\n%s", err, out)
	}
	if doc.Client.Version != "7.20.5" || doc.Client.NCPUs != 2 {
		t.Errorf("client %+v", doc.Client)
	}
	if doc.CPU.Mode != "according to prefs" || !doc.CPU.Suspended || doc.CPU.SuspendReason != 1024 || len(doc.CPU.SuspendReasons) != 1 || doc.CPU.SuspendReasons[0] != "CPU is busy" {
		t.Errorf("cpu %+v", doc.CPU)
	}
	if len(doc.Projects) != 1 || doc.Projects[0].Tasks != 3 || doc.Projects[0].DeferredUntil == "" {
		t.Errorf("projects %+v", doc.Projects)
	}
	if len(doc.Tasks) != 3 || doc.Tasks[2].State != "downloading" || doc.Tasks[2].Slot != -1 || doc.Tasks[0].ElapsedSecs < 11 || doc.Tasks[0].Deadline == "" {
		t.Errorf("tasks %+v", doc.Tasks)
	}
	if doc.Transfers == nil || doc.NotFetching == nil {
		t.Error("empty lists must be [] not null")
	}
}

func TestStatusErrors(t *testing.T) {
	// A port nobody listens on: bind, note it, close.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := ln.Addr().String()
	_ = ln.Close()

	wrongPass := fixtureReplies(t)
	wrongPass["auth2"] = replyFrame("<unauthorized/>")
	ws := startOpServer(t, wrongPass)

	tests := []struct {
		name      string
		args      []string
		code      int
		stderrHas []string
	}{
		{"refused", []string{"--host", refused}, 1, []string{"cannot connect to " + refused, "is boincd running? --gui_rpc_port?"}},
		{"refused watch", []string{"--host", refused, "--watch", "1"}, 1, []string{"cannot connect to " + refused}},
		{"extra arg", []string{"now"}, 2, []string{`unexpected argument "now"`, "usage: boincd status"}},
		{"bad flag", []string{"--bogus"}, 2, []string{"flag provided but not defined"}},
		{"bad watch", []string{"--watch", "-1"}, 2, []string{"--watch -1"}},
		{"wrong --passwd", []string{"--host", ws.ln.Addr().String(), "--passwd", "nope"}, 1, []string{"refused the password given with --passwd", "unauthorized"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, errs := runStatusCmd(t, context.Background(), append(tt.args, "--dir", t.TempDir())...)
			if code != tt.code {
				t.Errorf("exit %d, want %d; stderr %s", code, tt.code, errs)
			}
			for _, w := range tt.stderrHas {
				if !strings.Contains(errs, w) {
					t.Errorf("stderr %q lacks %q", errs, w)
				}
			}
		})
	}
}

// TestStatusStalePasswordFile: a gui_rpc_auth.cfg the server refuses does
// not stop a read-only look; the command reconnects without auth.
func TestStatusStalePasswordFile(t *testing.T) {
	replies := fixtureReplies(t)
	replies["auth2"] = replyFrame("<unauthorized/>")
	s := startOpServer(t, replies)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "gui_rpc_auth.cfg"), []byte("stale\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runStatusCmd(t, context.Background(), "--host", s.ln.Addr().String(), "--dir", dir)
	if code != 0 || !strings.Contains(out, "TASKS (3)") || !strings.Contains(errs, "continuing without authorization") {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, out, errs)
	}
}

func TestStatusWatch(t *testing.T) {
	s := startOpServer(t, fixtureReplies(t))
	s.served = make(chan string, 16)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		// Stop after the second refresh's get_messages.
		n := 0
		for op := range s.served {
			if op == "get_messages" {
				if n++; n == 2 {
					cancel()
					return
				}
			}
		}
	}()
	var out, errb bytes.Buffer
	code := statusMain(ctx, []string{"--host", s.ln.Addr().String(), "--dir", t.TempDir(), "--watch", "0.01"}, &out, &errb)
	<-done
	if code != 0 {
		t.Fatalf("exit %d, stderr %s", code, errb.String())
	}
	if n := strings.Count(out.String(), "PROJECTS (1)"); n < 1 {
		t.Errorf("%d renders:\n%s", n, out.String())
	}
	// One connection serves every refresh; only new messages are asked for.
	ops := s.opsSeen()
	if strings.Count(strings.Join(ops, ","), "get_state") < 2 {
		t.Errorf("ops %v: want at least two refreshes", ops)
	}
}

// TestStatusAddressFromConfig: without --host, status reaches the address
// in DIR's config (issue 14: it tried 31416 whatever the config said);
// --host still wins, --config names another file, and "off", port 0 and
// a broken config are clear errors.
func TestStatusAddressFromConfig(t *testing.T) {
	s := startOpServer(t, fixtureReplies(t))
	addr := s.ln.Addr().String()
	writeCfg := func(dir, body string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, "boincd.toml"), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	writeCfg(dir, "[metrics]\naddress = \"127.0.0.1:1\"\n[gui_rpc]\naddress = \""+addr+"\"\n")
	code, out, errs := runStatusCmd(t, context.Background(), "--dir", dir)
	if code != 0 || !strings.Contains(out, " at "+addr+" ") {
		t.Fatalf("--dir with gui_rpc.address %s: exit %d\nstdout %s\nstderr %s", addr, code, out, errs)
	}
	other := t.TempDir()
	code, out, errs = runStatusCmd(t, context.Background(), "--dir", other, "--config", filepath.Join(dir, "boincd.toml"))
	if code != 0 || !strings.Contains(out, " at "+addr+" ") {
		t.Fatalf("--config: exit %d\nstdout %s\nstderr %s", code, out, errs)
	}
	// An all-interfaces address is reached on loopback.
	_, port, _ := net.SplitHostPort(addr)
	wild := t.TempDir()
	writeCfg(wild, "[gui_rpc]\naddress = \"0.0.0.0:"+port+"\"\nallow_remote = true\n")
	if code, out, errs := runStatusCmd(t, context.Background(), "--dir", wild); code != 0 || !strings.Contains(out, " at 127.0.0.1:"+port+" ") {
		t.Fatalf("0.0.0.0:%s: exit %d\nstdout %s\nstderr %s", port, code, out, errs)
	}

	for _, tt := range []struct{ name, cfg, want string }{
		{"off", "[gui_rpc]\naddress = \"off\"\n", `GUI RPC is off (gui_rpc.address = "off" in `},
		{"port 0", "[gui_rpc]\naddress = \"127.0.0.1:0\"\n", "port 0"},
		{"broken", "[gui_rpc]\naddress = \"999.1.1.1:99999\"\n", `boincd.toml:2: gui_rpc.address "999.1.1.1:99999"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d := t.TempDir()
			writeCfg(d, tt.cfg)
			code, _, errs := runStatusCmd(t, context.Background(), "--dir", d)
			if code != 1 || !strings.Contains(errs, tt.want) {
				t.Errorf("exit %d, stderr %q; want 1 and %q", code, errs, tt.want)
			}
			// --host still wins over any config.
			if code, _, errs := runStatusCmd(t, context.Background(), "--dir", d, "--host", addr); code != 0 {
				t.Errorf("--host with this config: exit %d, stderr %s", code, errs)
			}
		})
	}
	if code, _, errs := runStatusCmd(t, context.Background(), "--config", filepath.Join(other, "missing.toml")); code != 1 || !strings.Contains(errs, "missing.toml") {
		t.Errorf("a named config that is missing: exit %d, stderr %q", code, errs)
	}
}

// TestStatusWatchReconnects: a watch whose connection the server closed
// between refreshes (boincd closes an unauthenticated connection silent
// for 10 s, an authenticated one after 30 s) reconnects at once instead
// of showing an error for one refresh.
func TestStatusWatchReconnects(t *testing.T) {
	s := startOpServer(t, fixtureReplies(t))
	s.closeAfter = "get_messages" // the last op of a refresh
	s.served = make(chan string, 64)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		n := 0
		for op := range s.served {
			if op == "get_messages" {
				if n++; n == 3 {
					cancel()
					return
				}
			}
		}
	}()
	var out, errb bytes.Buffer
	code := statusMain(ctx, []string{"--host", s.ln.Addr().String(), "--dir", t.TempDir(), "--watch", "0.05"}, &out, &errb)
	<-done
	if code != 0 {
		t.Fatalf("exit %d, stderr %s", code, errb.String())
	}
	if strings.Contains(out.String(), "retrying") {
		t.Errorf("a refresh showed an error although the server was up:\n%s", out.String())
	}
	if n := strings.Count(out.String(), "PROJECTS (1)"); n < 2 {
		t.Errorf("%d renders:\n%s", n, out.String())
	}
}

// The engine comes from host_info when one is reported, else the reason
// from the daemon's "Docker: …" event-log line.
func TestStatusContainerEngine(t *testing.T) {
	tests := []struct {
		name   string
		host   client.HostInfo
		logged string
		want   string
	}{
		{"podman", client.HostInfo{DockerVersion: "4.9.3", DockerType: 2}, "version 4.9.3 (podman) program=podman", "podman 4.9.3"},
		{"docker", client.HostInfo{DockerVersion: "24.0.7", DockerType: 1}, "", "docker 24.0.7"},
		{"none, why logged", client.HostInfo{}, "not usable: podman not installed; docker not installed", "none: not usable: podman not installed; docker not installed"},
		{"dont_use_docker", client.HostInfo{}, "not used (dont_use_docker)", "none: not used (dont_use_docker)"},
		{"not said", client.HostInfo{}, "", "none: none reported"},
		{"found earlier, detecting again", client.HostInfo{}, "version 4.9.3 (podman)", "none: none reported"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := containerEngine(tc.host, tc.logged).String(); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// The header names the alternate platforms get_state lists after the
// primary one.
func TestStatusAltPlatforms(t *testing.T) {
	st := &client.State{PlatformName: "x86_64-pc-linux-gnu", Platforms: []string{"x86_64-pc-linux-gnu", "i686-pc-linux-gnu"}}
	doc := buildStatus("127.0.0.1:31416", time.Unix(1795268600, 0), &client.CCStatus{}, st, nil, nil)
	if !slices.Equal(doc.Client.AltPlatforms, []string{"i686-pc-linux-gnu"}) {
		t.Errorf("alt_platforms %q", doc.Client.AltPlatforms)
	}
	var b bytes.Buffer
	if err := renderStatus(&b, doc, time.UTC); err != nil {
		t.Fatal(err)
	}
	if want := "(x86_64-pc-linux-gnu + i686-pc-linux-gnu, host ?, 0 CPUs)"; !strings.Contains(b.String(), want) {
		t.Errorf("output lacks %q:\n%s", want, b.String())
	}
}
