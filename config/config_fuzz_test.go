package config

import (
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/boincd/boincd/boinc"
)

// FuzzParse: any bytes give a config or an error naming the file (and the
// line where there is one), never a panic; an accepted config holds only
// canonical, distinct project URLs, a positive finite resource share and
// preferences inside their documented ranges.
func FuzzParse(f *testing.F) {
	if b, err := os.ReadFile(filepath.Join("..", "systemd", "boincd.toml")); err == nil {
		f.Add(b)
		// The shipped file with its examples switched on.
		f.Add([]byte(strings.ReplaceAll(string(b), "\n#", "\n")))
	}
	for _, s := range []string{
		"drop_results_on_detach = true\n[prefs]\nwork_buf_min_days = 0.2\n[[project]]\nurl = \"HTTP://Example.ORG//a\"\nauthenticator_file = \"key\"\nresource_share = 50\n[[project]]\nurl = \"http://b.example/\"\nauthenticator = \"k2\"\nno_new_tasks = true\n",
		"[gui_rpc]\naddress = \"127.0.0.1:31416\"\nallow_hosts = [\"a\", \"b\"]\n[metrics]\nenabled = true\naddress = \"[::1]:9464\"\n[log]\nlevel = \"DEBUG\"\nformat = \"json\"\n",
		"[[gpu_exclude]]\ndevice = \"GPU-1\"\nproject = \"http://a/\"\n",
		"[prefs]\nstart_hour = 24\nend_hour = 0\nrun_if_user_active = false\n",
		"[prefs]\nwork_buf_min_days = 1e-300\n",
		"[[project]]\nurl = \"http://a/\"\nauthenticator = \"k\"\nresource_share = 1e308\n",
		// Found by fuzzing: NaN and infinite numbers used to pass the range checks.
		"[prefs]\nwork_buf_min_days = nan\n",
		"[[project]]\nurl=\"http://a/\"\nauthenticator=\"k\"\nresource_share = inf\n",
		"data_dir = \n", "[prefs]\nwork_buf_mni_days = 1\n", "a.b.c = 1\n[a]\n", "\"\"\"\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse("x.toml", data)
		if err != nil {
			if c != nil {
				t.Fatal("config and error both returned")
			}
			if !strings.HasPrefix(err.Error(), "x.toml:") {
				t.Fatalf("error %q does not name the file", err)
			}
			return
		}
		seen := map[string]bool{}
		for _, p := range c.Projects {
			canon, err := boinc.CanonicalMasterURL(p.URL)
			if err != nil || canon != p.URL || seen[p.URL] {
				t.Fatalf("project URL %q accepted (canonical %q, %v, duplicate %v)", p.URL, canon, err, seen[p.URL])
			}
			seen[p.URL] = true
			if !(p.ResourceShare > 0) || math.IsInf(p.ResourceShare, 0) {
				t.Fatalf("project %s: resource_share %v accepted", p.URL, p.ResourceShare)
			}
		}
		pv := reflect.ValueOf(c.Prefs)
		for i := 0; i < pv.NumField(); i++ {
			if v, ok := pv.Field(i).Interface().(*float64); ok && v != nil && (math.IsNaN(*v) || math.IsInf(*v, 0)) {
				t.Fatalf("prefs.%s = %v accepted", pv.Type().Field(i).Tag.Get("toml"), *v)
			}
		}
	})
}
