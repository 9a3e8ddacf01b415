//go:build unix

package e2e

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/boincd/boincd/internal/testproject"
)

// TestWebPrefsAndEmailAttach: in a real browser against a real daemon
// child, the Computing preferences view refuses a bad value naming the
// field, saves an override the daemon applies (the Manager's
// set_global_prefs_override and read_global_prefs_override), shows it
// after a reload and clears it with Use defaults; and the Projects view
// attaches by email and password (the Manager's lookup_account, then
// project_attach), saying "bad password" first, with boinccmd as the
// witness.
func TestWebPrefsAndEmailAttach(t *testing.T) {
	bin := chromiumPath(t)
	boinccmdPath(t)
	t.Parallel()
	dir := newDataDir(t)
	p := startProject(t, testproject.Config{Name: "first project", TotalJobs: 1})
	other := startProject(t, testproject.Config{Name: "attached by email",
		Accounts: []testproject.Account{{Email: "volunteer@example.org", Password: "correct horse", Authenticator: accountKey}}})
	writeConfig(t, dir, configSpec{projects: []*project{p}})
	d, c := guiDaemon(t, "daemon", dir, childOptions{})
	web := d.waitLog("web dashboard listening", 30*time.Second).str("url")
	ctx := browser(t, bin)
	run(t, ctx, "log in", 20*time.Second,
		chromedp.Navigate(web+"#prefs"),
		chromedp.WaitVisible(chromedp.CSS(`#password`)),
		chromedp.SendKeys(chromedp.CSS(`#password`), c.pass),
		chromedp.Submit(chromedp.CSS(`#password`)),
		chromedp.WaitVisible(chromedp.CSS(`nav`)),
		chromedp.Click(chromedp.CSS(`nav a[data-tab="prefs"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#p-max_ncpus_pct`)),
	)
	override := filepath.Join(dir, "global_prefs_override.xml")

	// A value the Manager's dialog refuses: refused, the field named and
	// focused, nothing written.
	run(t, ctx, "save 150 % of the CPUs", 10*time.Second,
		chromedp.SetValue(chromedp.CSS(`#p-max_ncpus_pct`), "150"),
		chromedp.Click(chromedp.CSS(`#prefs-save`)),
		chromedp.WaitVisible(chromedp.CSS(`#prefs-error`)),
	)
	if msg := eval[string](t, ctx, `document.getElementById("prefs-error").textContent`); !strings.Contains(msg, "max_ncpus_pct") || !strings.Contains(msg, "between 0 and 100") {
		t.Errorf("error shown: %q, want one naming max_ncpus_pct and its range", msg)
	}
	if id := eval[string](t, ctx, `document.activeElement.id`); id != "p-max_ncpus_pct" {
		t.Errorf("focus on %q after the refusal, want the faulty field", id)
	}
	if _, err := os.Stat(override); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a refused form wrote the override (%v)", err)
	}

	// A good one: written and applied.
	run(t, ctx, "save 50 % of the CPUs and 2 days of work", 10*time.Second,
		chromedp.SetValue(chromedp.CSS(`#p-max_ncpus_pct`), "50"),
		chromedp.SetValue(chromedp.CSS(`#p-work_buf_min_days`), "2"),
		chromedp.Click(chromedp.CSS(`#prefs-save`)),
		chromedp.WaitVisible(chromedp.CSS(`#prefs-saved`)),
	)
	raw, err := os.ReadFile(override)
	if err != nil || !strings.Contains(string(raw), "<max_ncpus_pct>50.000000</max_ncpus_pct>") || !strings.Contains(string(raw), "<work_buf_min_days>2.000000</work_buf_min_days>") {
		t.Fatalf("override file: %v\n%s", err, raw)
	}
	d.waitFor("the daemon applying 50 % of the CPUs", 20*time.Second, func(l logLine) bool {
		return l.Msg == "preferences changed" && l.num("max_ncpus_pct") == 50 && l.num("work_buf_min_days") == 2
	})
	eval[bool](t, ctx, `(document.getElementById("prefs").scrollIntoView(), true)`)
	shot(t, ctx, "prefs")
	run(t, ctx, "reload", 20*time.Second, chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS(`#p-max_ncpus_pct`)))
	if v := eval[string](t, ctx, `document.getElementById("p-max_ncpus_pct").value`); v != "50" {
		t.Errorf("after a reload the form shows %q %% of the CPUs, want the 50 in force", v)
	}
	if note := eval[string](t, ctx, `document.querySelector("#prefs .note").textContent`); !strings.Contains(note, "Local preferences") {
		t.Errorf("note %q does not say local preferences are in force", note)
	}

	// Use defaults: confirmed, the override goes, the form shows 100.
	run(t, ctx, "use defaults", 10*time.Second,
		chromedp.Click(chromedp.CSS(`#prefs-defaults`)),
		chromedp.WaitVisible(chromedp.CSS(`#confirm-ok`)),
		chromedp.Click(chromedp.CSS(`#confirm-ok`)),
	)
	pollJS(t, ctx, "the form showing the defaults", `document.getElementById("prefs-saved") !== null && document.getElementById("p-max_ncpus_pct").value === "100"`, 10*time.Second)
	if _, err := os.Stat(override); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Use defaults left the override file (%v)", err)
	}

	// Attach by email and password: a wrong password first.
	attach := func(password string) {
		t.Helper()
		run(t, ctx, "attach by email", 10*time.Second,
			chromedp.Click(chromedp.CSS(`nav a[data-tab="projects"]`)),
			chromedp.WaitVisible(chromedp.CSS(`#account-url`)),
			chromedp.SetValue(chromedp.CSS(`#account-url`), other.URL()),
			chromedp.SetValue(chromedp.CSS(`#account-email`), "volunteer@example.org"),
			chromedp.SetValue(chromedp.CSS(`#account-password`), password),
			chromedp.Click(chromedp.CSS(`#account-lookup`)),
		)
	}
	attach("wrong horse")
	pollJS(t, ctx, "the bad password said", `(document.getElementById("account-status") || {}).dataset?.failed === "true"`, 30*time.Second)
	if msg := eval[string](t, ctx, `document.getElementById("account-status").textContent`); !strings.Contains(msg, "Bad password") {
		t.Errorf("wrong password: the page says %q", msg)
	}
	attach("correct horse")
	pollJS(t, ctx, "the attach said", `/Attached to/.test((document.getElementById("account-status") || {}).textContent || "")`, 30*time.Second)
	c.until("the project attached by email", 30*time.Second, func(out string) bool {
		return strings.Contains(out, "master URL: "+other.URL())
	}, "--get_project_status")
	eval[bool](t, ctx, `(document.getElementById("account-form").scrollIntoView(), true)`)
	shot(t, ctx, "attach-email")
	if loc := eval[string](t, ctx, `location.href`); strings.Contains(loc, "horse") || strings.Contains(loc, "volunteer") {
		t.Errorf("the URL %q carries the account", loc)
	}
}
