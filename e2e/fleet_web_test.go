//go:build unix

package e2e

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/boincd/boincd/internal/testproject"
)

// TestWebFleet: the dashboard's Fleet tab in a real browser. A C++
// client (Debian's boinc-client, 7.20) computing the test project's
// tasks on another port is added in the page with its GUI RPC password;
// its tasks appear beside boincd's own card, and a Suspend clicked on one
// of them is what boinccmd then reads from that client.
func TestWebFleet(t *testing.T) {
	bin := chromiumPath(t)
	boinccmdPath(t)
	cppBin, err := exec.LookPath("boinc")
	if err != nil {
		if os.Getenv("BOINCD_REQUIRE_BROWSER") == "1" {
			t.Fatal("the C++ BOINC client (package boinc-client) is not installed and BOINCD_REQUIRE_BROWSER=1")
		}
		t.Skip("the C++ BOINC client (package boinc-client) is not installed")
	}
	t.Parallel()
	p := startProject(t, testproject.Config{Name: "Fleet project", TotalJobs: 2, MaxJobsPerRPC: 2,
		// Long enough to run through every step; the test's end kills it.
		Job: testproject.JobTemplate{CommandLine: "--seconds 400", FpopsEst: 400e9, InputSize: 1000}})
	cpp := startCppClient(t, cppBin, p.URL())

	dir := newDataDir(t)
	writeConfig(t, dir, configSpec{})
	d, c := guiDaemon(t, "daemon", dir, childOptions{})
	web := d.waitLog("web dashboard listening", 30*time.Second).str("url")
	ctx := browser(t, bin)
	run(t, ctx, "log in", 20*time.Second,
		chromedp.Navigate(web),
		chromedp.WaitVisible(chromedp.CSS(`#password`)),
		chromedp.SendKeys(chromedp.CSS(`#password`), c.pass),
		chromedp.Submit(chromedp.CSS(`#password`)),
		chromedp.WaitVisible(chromedp.CSS(`#tasks`)),
	)

	// Add the C++ client in the page, with the keyboard's Enter.
	run(t, ctx, "add the C++ client", 20*time.Second,
		chromedp.Click(chromedp.CSS(`nav a[data-tab="fleet"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#fleet-addr`)),
		chromedp.SendKeys(chromedp.CSS(`#fleet-name`), "C++ client"),
		chromedp.SendKeys(chromedp.CSS(`#fleet-addr`), cpp.addr),
		chromedp.SendKeys(chromedp.CSS(`#fleet-pass`), cpp.pass+"\r"),
	)
	host := `#fleet li.fleet-host[data-addr="` + cpp.addr + `"]`
	pollJS(t, ctx, "the C++ client's card", `document.querySelector('`+host+`') !== null`, 20*time.Second)
	if v := eval[string](t, ctx, `document.getElementById("fleet-pass").value`); v != "" {
		t.Errorf("the password field still holds %q after adding", v)
	}

	// Its tasks appear once it has fetched and started them.
	pollJS(t, ctx, "the C++ client's running tasks", `document.querySelector('`+host+` li.task.running') !== null`, 120*time.Second)
	if v := eval[string](t, ctx, `document.querySelector('`+host+` .badge').textContent`); v != "connected" {
		t.Errorf("the C++ client's status shows %q", v)
	}
	if v := eval[string](t, ctx, `document.querySelector('`+host+` .meta small').textContent`); !strings.HasPrefix(v, "7.20.") {
		t.Errorf("the C++ client's version shows %q, want 7.20.x", v)
	}
	page := eval[string](t, ctx, `document.documentElement.outerHTML`)
	if strings.Contains(page, cpp.pass) || strings.Contains(eval[string](t, ctx, `location.href`), cpp.pass) {
		t.Error("the C++ client's password is in the page or its URL")
	}
	checkUntouched(t, ctx)
	run(t, ctx, "scroll to the Fleet tab", 5*time.Second, chromedp.ScrollIntoView(chromedp.CSS(`#h-fleet`)))
	shot(t, ctx, "fleet")

	// Suspend one of its tasks in the page: the C++ client has it
	// suspended via GUI, and the page says so.
	name := eval[string](t, ctx, `document.querySelector('`+host+` li.task.running').dataset.task`)
	sel := host + ` li.task[data-task="` + name + `"]`
	run(t, ctx, "click Suspend on the C++ client's task", 10*time.Second,
		chromedp.Click(chromedp.CSS(sel+` button[data-k^="fleet "][data-k*=" suspend "]`)))
	cpp.until(name+" suspended via GUI on the C++ client", stateWait, func(out string) bool {
		return field(taskBlocks(out)[name], "suspended via GUI") == "yes"
	}, "--get_tasks")
	pollJS(t, ctx, "the page showing the C++ client's task suspended",
		`document.querySelector('`+sel+` .state') !== null && document.querySelector('`+sel+` .state').textContent === "Task suspended by user"`, 20*time.Second)
	run(t, ctx, "click Resume", 10*time.Second,
		chromedp.Click(chromedp.CSS(sel+` button[data-k^="fleet "][data-k*=" resume "]`)))
	cpp.until(name+" resumed on the C++ client", stateWait, func(out string) bool {
		b, ok := taskBlocks(out)[name]
		return ok && !strings.Contains(b, "suspended via GUI: yes")
	}, "--get_tasks")

	// Removing asks first, then forgets the host.
	run(t, ctx, "remove the C++ client", 10*time.Second,
		chromedp.Click(chromedp.CSS(host+` button[data-k$=" remove"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#confirm-ok`)),
		chromedp.Click(chromedp.CSS(`#confirm-ok`)),
	)
	pollJS(t, ctx, "the C++ client's card gone", `document.querySelector('`+host+`') === null`, 20*time.Second)
}
