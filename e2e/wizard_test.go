//go:build unix

package e2e

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/boincd/boincd/guirpc/client"
	"github.com/boincd/boincd/internal/testproject"
)

// The BOINC Manager's Add Project wizard against boincd and the in-repo
// test project, over a real GUI RPC connection, with the requests the
// Manager's RPC library sends (lib/gui_rpc_client_ops.cpp) in the order
// its wizard sends them: get_project_config and its poll, lookup_account
// (or create_account) with the password hash and its poll, then
// project_attach with the account key and project_attach_poll until the
// first contact is over. Then boinccmd's --get_project_config,
// --lookup_account and --create_account, whose output must be the C++
// client's for the same commands against the same project.

const (
	wizEmail    = "volunteer@example.org"
	wizPassword = "correct horse"
)

// wizHash is get_passwd_hash: md5(password + lower-case email).
func wizHash(password, email string) string {
	sum := md5.Sum([]byte(password + strings.ToLower(email)))
	return hex.EncodeToString(sum[:])
}

func wizProject(t *testing.T) *project {
	t.Helper()
	return startProject(t, testproject.Config{
		Name:       "Wizard Test Project",
		Accounts:   []testproject.Account{{Email: wizEmail, Password: wizPassword, UserName: "volunteer"}},
		TermsOfUse: "Be kind to the servers.",
		TotalJobs:  1,
	})
}

// wizGUI connects to a daemon's GUI RPC port and authorizes, as the
// Manager does.
func wizGUI(t *testing.T, d *daemonProc) *client.Client {
	t.Helper()
	l := d.waitLog("GUI RPC listening", 30*time.Second)
	pass, err := os.ReadFile(filepath.Join(d.dir, "gui_rpc_auth.cfg"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, l.str("address"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if err := c.Authorize(ctx, strings.TrimSpace(string(pass))); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Call(ctx, "<exchange_versions>\n   <major>7</major>\n   <minor>20</minor>\n   <release>5</release>\n   <name>BOINC Manager</name>\n</exchange_versions>\n"); err != nil {
		t.Fatal(err)
	}
	return c
}

func wizCall(t *testing.T, c *client.Client, req string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	body, err := c.Call(ctx, req)
	if err != nil {
		t.Fatalf("%s: %v (%s)", strings.TrimSpace(req), err, body)
	}
	return string(body)
}

var errorNumRE = regexp.MustCompile(`<error_num>(-?\d+)</error_num>`)

// wizPoll sends poll every 500 ms, as the wizard does, until the reply is
// not ERR_IN_PROGRESS (-204); it returns that reply.
func wizPoll(t *testing.T, d *daemonProc, c *client.Client, poll string) string {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		r := wizCall(t, c, poll)
		if m := errorNumRE.FindStringSubmatch(r); m == nil || m[1] != "-204" {
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s still in progress after 60 s:\n%s", poll, d.tail(40))
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func TestManagerWizardAttachesByEmailAndPassword(t *testing.T) {
	t.Parallel()
	srv := wizProject(t)
	d := startDaemon(t, "boincd", childOptions{DataDir: newDataDir(t)})
	c := wizGUI(t, d)
	url := strings.TrimSuffix(srv.URL(), "/") // as typed: the client canonicalises it

	// 1. The project's configuration.
	if r := wizCall(t, c, "<get_project_config>\n   <url>"+url+"</url>\n</get_project_config>\n"); r != "<success/>" {
		t.Fatalf("get_project_config: %q", r)
	}
	cfg := wizPoll(t, d, c, "<get_project_config_poll/>\n")
	for _, want := range []string{"<name>Wizard Test Project</name>", "<min_passwd_length>6</min_passwd_length>", "Be kind to the servers.", "<platform_name>"} {
		if !strings.Contains(cfg, want) {
			t.Errorf("project_config lacks %q:\n%s", want, cfg)
		}
	}
	if strings.Contains(cfg, "<error_num>") {
		t.Errorf("project_config has an error:\n%s", cfg)
	}

	// 2. A wrong password: the project's ERR_BAD_PASSWD and its words.
	lookup := func(password string) string {
		return "<lookup_account>\n   <url>" + url + "</url>\n   <email_addr>" + wizEmail + "</email_addr>\n" +
			"   <passwd_hash>" + wizHash(password, wizEmail) + "</passwd_hash>\n   <ldap_auth>0</ldap_auth>\n</lookup_account>\n"
	}
	if r := wizCall(t, c, lookup("wrong password")); r != "<success/>" {
		t.Fatalf("lookup_account: %q", r)
	}
	r := wizPoll(t, d, c, "<lookup_account_poll/>\n")
	if !strings.Contains(r, "<error_num>-206</error_num>") || !strings.Contains(r, "<error_msg>Invalid password</error_msg>") {
		t.Errorf("wrong password: %s", r)
	}

	// 3. The right one: the account key.
	wizCall(t, c, lookup(wizPassword))
	r = wizPoll(t, d, c, "<lookup_account_poll/>\n")
	key, _ := srv.AccountKey(wizEmail)
	if key == "" || !strings.Contains(r, "<authenticator>"+key+"</authenticator>") {
		t.Fatalf("lookup_account_poll: %s (the project's key %q)", r, key)
	}
	if rpcs := srv.AccountRPCs(); len(rpcs) != 2 || rpcs[1].Query != "email_addr=volunteer%40example%2Eorg&passwd_hash="+wizHash(wizPassword, wizEmail) {
		t.Errorf("the project saw %+v", rpcs)
	}

	// 4. Attach with it, and wait for the first contact.
	if r := wizCall(t, c, "<project_attach>\n  <project_url>"+url+"</project_url>\n  <authenticator>"+key+"</authenticator>\n"+
		"  <project_name>Wizard Test Project</project_name>\n</project_attach>\n"); r != "<success/>" {
		t.Fatalf("project_attach: %q", r)
	}
	r = wizPoll(t, d, c, "<project_attach_poll/>\n")
	if !strings.Contains(r, "<error_num>0</error_num>") {
		t.Fatalf("project_attach_poll: %s\n%s", r, d.tail(40))
	}

	// The event log tells of the configuration fetch as the C++ client
	// does, and holds no password hash (get_messages needs no password).
	msgs := wizCall(t, c, "<get_messages>\n  <seqno>0</seqno>\n</get_messages>\n")
	if !strings.Contains(msgs, "Fetching configuration file from "+srv.URL()+"get_project_config.php") {
		t.Errorf("event log:\n%s", msgs)
	}
	for _, pw := range []string{wizPassword, "wrong password"} {
		if strings.Contains(msgs, wizHash(pw, wizEmail)) {
			t.Errorf("the event log holds a password hash:\n%s", msgs)
		}
	}

	// 5. Attached, and it gets work.
	if st := wizCall(t, c, "<get_project_status/>"); !strings.Contains(st, "<master_url>"+srv.URL()+"</master_url>") {
		t.Errorf("get_project_status after the attach:\n%s", st)
	}
	deadline := time.Now().Add(60 * time.Second)
	for len(srv.Stats().Sent) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no task sent to the attached client:\n%s", d.tail(40))
		}
		time.Sleep(200 * time.Millisecond)
	}
	d.stop()
}

func TestManagerWizardCreatesAccount(t *testing.T) {
	t.Parallel()
	srv := wizProject(t)
	d := startDaemon(t, "boincd", childOptions{DataDir: newDataDir(t)})
	c := wizGUI(t, d)
	email := "New.User@Example.org"
	hash := wizHash("new password", email)
	req := "<create_account>\n   <url>" + srv.URL() + "</url>\n   <email_addr>" + strings.ToLower(email) + "</email_addr>\n" +
		"   <passwd_hash>" + hash + "</passwd_hash>\n   <user_name>New &amp; User</user_name>\n   <team_name></team_name>\n" +
		"   <consented_to_terms/>\n</create_account>\n"
	if r := wizCall(t, c, req); r != "<success/>" {
		t.Fatalf("create_account: %q", r)
	}
	r := wizPoll(t, d, c, "<create_account_poll/>\n")
	key, ok := srv.AccountKey(email)
	if !ok || !strings.Contains(r, "<authenticator>"+key+"</authenticator>") {
		t.Fatalf("create_account_poll: %s (account made: %v)", r, ok)
	}
	rpcs := srv.AccountRPCs()
	want := "email_addr=new%2Euser%40example%2Eorg&passwd_hash=" + hash + "&user_name=New%20%26%20User&consent_flag=1&source=BOINC%20Manager"
	if len(rpcs) != 1 || rpcs[0].Path != "create_account.php" || rpcs[0].Query != want {
		t.Errorf("the project saw %+v\nwant query %s", rpcs, want)
	}
	// The same email with another password: the project's refusal.
	wizCall(t, c, strings.Replace(req, hash, wizHash("other", email), 1))
	if r := wizPoll(t, d, c, "<create_account_poll/>\n"); !strings.Contains(r, "<error_num>-137</error_num>") {
		t.Errorf("create_account for a taken address: %s", r)
	}
	// Attach with the new key.
	wizCall(t, c, "<project_attach>\n  <project_url>"+srv.URL()+"</project_url>\n  <authenticator>"+key+"</authenticator>\n  <project_name></project_name>\n</project_attach>\n")
	if r := wizPoll(t, d, c, "<project_attach_poll/>\n"); !strings.Contains(r, "<error_num>0</error_num>") {
		t.Errorf("project_attach_poll: %s", r)
	}
	d.stop()
}

// wizBoinccmd runs boinccmd against a GUI RPC address.
func wizBoinccmd(t *testing.T, addr, pass string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, boinccmdPath(t), append([]string{"--host", addr, "--passwd", pass}, args...)...)
	cmd.Dir = t.TempDir()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("boinccmd %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// wizStable drops boinccmd's "operation in progress" lines, whose number
// depends on timing.
func wizStable(out string) string {
	var keep []string
	for _, l := range strings.Split(out, "\n") {
		if l != "poll status: operation in progress" {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}

// wizCClient starts the C++ client (Debian's boinc-client) with no
// project, and returns its GUI RPC address and password; "" when it is not
// installed.
func wizCClient(t *testing.T) (addr, pass string) {
	t.Helper()
	bin, err := exec.LookPath("boinc")
	if err != nil {
		return "", ""
	}
	dir := t.TempDir()
	pass = "wizard-test"
	cc := "<cc_config>\n<options><no_info_fetch>1</no_info_fetch></options>\n</cc_config>\n"
	if err := os.WriteFile(filepath.Join(dir, "cc_config.xml"), []byte(cc), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "gui_rpc_auth.cfg"), []byte(pass+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	port := freePort(t)
	cmd := exec.Command(bin, "--dir", dir, "--gui_rpc_port", strconv.Itoa(port), "--allow_multiple_clients",
		"--no_gpus", "--skip_cpu_benchmarks", "--no_info_fetch")
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
	})
	addr = "127.0.0.1:" + strconv.Itoa(port)
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		c, err := client.Dial(ctx, addr)
		cancel()
		if err == nil {
			_ = c.Close()
			return addr, pass
		}
		select {
		case <-done:
			t.Fatal("the C++ client exited at start")
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the C++ client does not listen on %s", addr)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func TestBoinccmdAccountCommands(t *testing.T) {
	t.Parallel()
	boinccmdPath(t)
	srv := wizProject(t)
	d := startDaemon(t, "boincd", childOptions{DataDir: newDataDir(t)})
	c := newBoinccmd(t, d)
	key, _ := srv.AccountKey(wizEmail)
	url := srv.URL()

	cmds := [][]string{
		{"--get_project_config", url},
		{"--lookup_account", url, wizEmail, wizPassword},
		{"--lookup_account", url, wizEmail, "wrong password"},
		{"--lookup_account", url, "nobody@example.org", wizPassword},
		{"--create_account", url, "fresh@example.org", "fresh password", "Fresh User"},
	}
	want := []string{
		"uses_username: 0\nname: Wizard Test Project\nmin_passwd_length: 6\n",
		"status: Success\naccount key: " + key + "\n",
		"status: Success\npoll status: bad password\n",
		"status: Success\npoll status: no database rows found in lookup/enumerate\n",
		"", // the new account's key, known once it exists
	}
	got := make([]string, len(cmds))
	for i, args := range cmds {
		got[i] = wizStable(wizBoinccmd(t, c.addr, c.pass, args...))
	}
	fresh, ok := srv.AccountKey("fresh@example.org")
	if !ok {
		t.Fatal("boinccmd --create_account made no account")
	}
	want[4] = "status: Success\naccount key: " + fresh + "\n"
	for i := range cmds {
		if got[i] != want[i] {
			t.Errorf("boinccmd %s against boincd:\n%s\nwant:\n%s", strings.Join(cmds[i], " "), got[i], want[i])
		}
	}

	// The C++ client, same commands, same project: the same output.
	caddr, cpass := wizCClient(t)
	if caddr == "" {
		t.Log("the C++ client (package boinc-client) is not installed: not compared")
		return
	}
	for i, args := range cmds {
		out := wizStable(wizBoinccmd(t, caddr, cpass, args...))
		if out != got[i] {
			t.Errorf("boinccmd %s:\nC++ client:\n%s\nboincd:\n%s", strings.Join(args, " "), out, got[i])
		}
	}
}
