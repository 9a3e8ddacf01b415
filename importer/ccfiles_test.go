package importer

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/boincd/boincd/importer/importtest"
)

// cc_config.xml and each project's app_config.xml come along into the
// same places in boincd's data directory, and the summary says so; a
// file boincd already has with other content is kept.
func TestImportCarriesTuningFiles(t *testing.T) {
	const cc = "<cc_config><options><ncpus>2</ncpus></options></cc_config>\n"
	const ac = "<app_config><app><name>refapp</name><max_concurrent>1</max_concurrent></app></app_config>\n"
	for _, tc := range []struct {
		name     string
		existing string // boincd's own cc_config.xml, "" none
		dry      bool
		wantCC   string
		note     string
	}{
		{"fresh", "", false, cc, "cc_config.xml carried over"},
		{"same file", cc, false, cc, "cc_config.xml: boincd already has the same file"},
		{"boincd's own kept", "<cc_config/>\n", false, "<cc_config/>\n", "exists with other content (kept)"},
		{"dry run copies nothing", "", true, "", "cc_config.xml carried over"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := importtest.Build(t, importtest.Options{StateFile: "client_state_task_running.xml"})
			if err := os.WriteFile(filepath.Join(src.Path, "cc_config.xml"), []byte(cc), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(src.ProjectDir, "app_config.xml"), []byte(ac), 0o644); err != nil {
				t.Fatal(err)
			}
			dst := t.TempDir()
			if tc.existing != "" {
				if err := os.WriteFile(filepath.Join(dst, "cc_config.xml"), []byte(tc.existing), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			sum, err := runImport(t, src.Path, dst, tc.dry)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := os.ReadFile(filepath.Join(dst, "cc_config.xml"))
			if string(got) != tc.wantCC {
				t.Errorf("cc_config.xml %q, want %q", got, tc.wantCC)
			}
			gotAC, _ := os.ReadFile(filepath.Join(dst, "projects", fixtureEsc, "app_config.xml"))
			if wantAC := map[bool]string{false: ac, true: ""}[tc.dry]; string(gotAC) != wantAC {
				t.Errorf("app_config.xml %q, want %q", gotAC, wantAC)
			}
			var text strings.Builder
			if err := sum.WriteText(&text); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(text.String(), tc.note) || !strings.Contains(text.String(), "app_config.xml carried over") {
				t.Errorf("summary lacks %q or the app_config.xml line:\n%s", tc.note, text.String())
			}
		})
	}
}
