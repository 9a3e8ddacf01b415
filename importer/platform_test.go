package importer

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/boincd/boincd/boinc"
	"github.com/boincd/boincd/importer/importtest"
	"github.com/boincd/boincd/platform"
)

// TestImportPlatforms: a C++ data directory holding app versions of
// several platforms keeps every one this host runs, with its tasks on it;
// a version of a platform the host does not run becomes the primary
// platform's, as CLIENT_STATE::parse_state_file does (here it then
// duplicates the primary version and the first is kept), and its task
// moves to the primary platform's latest version.
func TestImportPlatforms(t *testing.T) {
	const (
		x64, x86, win = platform.LinuxX86_64, platform.LinuxI686, platform.WindowsX86_64
		r1, r2, r3    = "refwu_1795268042_1_0", "refwu_1795268042_2_0", "refwu_1795268042_3_0"
	)
	version := func(plat string) string {
		return "<app_version>\n    <app_name>refapp</app_name>\n    <version_num>100</version_num>\n    <platform>" + plat +
			"</platform>\n    <avg_ncpus>1.000000</avg_ncpus>\n    <flops>1000000000.000000</flops>\n" +
			"    <file_ref>\n        <file_name>refapp_1.00_x86_64-pc-linux-gnu.sh</file_name>\n        <main_program/>\n    </file_ref>\n</app_version>\n"
	}
	src := importtest.Build(t, importtest.Options{
		StateFile: "client_state_2executing_1downloading.xml",
		Edit: func(s string) string {
			i := strings.Index(s, "</app_version>\n") + len("</app_version>\n")
			s = s[:i] + version(x86) + version(win) + s[i:]
			s = importtest.SetResultField(t, s, r2, "platform", x86)
			return importtest.SetResultField(t, s, r3, "platform", win)
		},
	})
	dst := filepath.Join(t.TempDir(), "boincd")
	sum, err := Import(context.Background(), Options{
		BOINCDir: src.Path, DataDir: dst, Platforms: []string{x64, x86},
		Now: func() time.Time { return time.Unix(1795268600, 0) },
	})
	if err != nil {
		t.Fatalf("Import: %v", err)
	}
	snap := loadState(t, dst)
	var got []string
	for _, v := range snap.AppVersions {
		got = append(got, v.Platform)
	}
	slices.Sort(got)
	if strings.Join(got, " ") != x86+" "+x64 {
		t.Errorf("imported versions' platforms %q, want %q and %q", got, x64, x86)
	}
	want := map[string]string{r1: x64, r2: x86, r3: x64}
	for name, plat := range want {
		r := resultByName(snap, name)
		if r == nil {
			t.Errorf("result %s not imported", name)
			continue
		}
		if r.Platform != plat || r.VersionNum != 100 {
			t.Errorf("result %s: platform %q version %d, want %q 100", name, r.Platform, r.VersionNum, plat)
		}
		if key := boinc.AppVersionKey(r.ProjectURL, "refapp", r.Platform, r.PlanClass, r.VersionNum); !hasVersion(snap.AppVersions, key) {
			t.Errorf("result %s: no imported version %q", name, key)
		}
	}
	notes := strings.Join(sum.Projects[0].Notes, "\n")
	if !strings.Contains(notes, "has platform "+win+", which this host does not run; changed to "+x64) {
		t.Errorf("notes %q: the changed platform is not said", notes)
	}
}

func hasVersion(vs []*boinc.AppVersion, key string) bool {
	for _, v := range vs {
		if v.Key() == key {
			return true
		}
	}
	return false
}
