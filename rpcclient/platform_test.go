package rpcclient

import (
	"bytes"
	"strings"
	"testing"

	"github.com/boincd/boincd/platform"
)

// platformLines are the request's <platform_name> and <alt_platform>
// lines, in order.
func platformLines(t *testing.T, xml string) string {
	t.Helper()
	var out []string
	in := false
	for _, l := range strings.Split(xml, "\n") {
		switch {
		case strings.HasPrefix(l, "    <platform_name>"):
			in = true
		case in && (strings.HasPrefix(l, "    <alt_platform>") || strings.HasPrefix(l, "        <name>") || l == "    </alt_platform>"):
		default:
			in = false
		}
		if in {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestPlatformLines: what each build sends as its platforms in the
// scheduler and account manager requests (CLIENT_STATE::write_platforms),
// for the hosts each typically runs on, and the User-Agent's platform.
func TestPlatformLines(t *testing.T) {
	tests := []struct {
		build        string
		goos, goarch string
		probe        platform.Probe
		want         string
	}{
		{"linux/amd64 with 32-bit libraries", "linux", "amd64", platform.Probe{KernelMachine: "x86_64", Run32: true},
			"    <platform_name>x86_64-pc-linux-gnu</platform_name>\n" +
				"    <alt_platform>\n        <name>i686-pc-linux-gnu</name>\n    </alt_platform>"},
		{"linux/amd64, 64-bit only", "linux", "amd64", platform.Probe{KernelMachine: "x86_64"},
			"    <platform_name>x86_64-pc-linux-gnu</platform_name>"},
		{"linux/arm64 with armhf", "linux", "arm64", platform.Probe{KernelMachine: "aarch64", Run32: true},
			"    <platform_name>aarch64-unknown-linux-gnu</platform_name>\n" +
				"    <alt_platform>\n        <name>arm-unknown-linux-gnueabihf</name>\n    </alt_platform>"},
		{"linux/arm64, 64-bit only", "linux", "arm64", platform.Probe{KernelMachine: "aarch64"},
			"    <platform_name>aarch64-unknown-linux-gnu</platform_name>"},
		{"windows/amd64", "windows", "amd64", platform.Probe{WindowsMajor: 10, WindowsBuild: 19045},
			"    <platform_name>windows_x86_64</platform_name>\n" +
				"    <alt_platform>\n        <name>windows_intelx86</name>\n    </alt_platform>"},
		{"darwin/arm64 with Rosetta", "darwin", "arm64", platform.Probe{Rosetta: true},
			"    <platform_name>arm64-apple-darwin</platform_name>\n" +
				"    <alt_platform>\n        <name>x86_64-apple-darwin</name>\n    </alt_platform>"},
		{"darwin/arm64 without Rosetta", "darwin", "arm64", platform.Probe{},
			"    <platform_name>arm64-apple-darwin</platform_name>"},
	}
	for _, tc := range tests {
		names := platform.Names(tc.goos, tc.goarch, tc.probe)
		var sb, ab bytes.Buffer
		req := &SchedulerRequest{Platform: names[0], AltPlatforms: names[1:]}
		if _, err := req.WriteTo(&sb); err != nil {
			t.Fatal(err)
		}
		if got := platformLines(t, sb.String()); got != tc.want {
			t.Errorf("%s: scheduler request platforms\n%s\nwant\n%s", tc.build, got, tc.want)
		}
		am := &AcctMgrRequest{Platform: names[0], AltPlatforms: names[1:]}
		if _, err := am.WriteTo(&ab); err != nil {
			t.Fatal(err)
		}
		if got := platformLines(t, ab.String()); got != tc.want {
			t.Errorf("%s: account manager request platforms\n%s\nwant\n%s", tc.build, got, tc.want)
		}
		if ua, want := userAgent(names[0]), "BOINC client ("+names[0]+" 7.20.5)"; ua != want {
			t.Errorf("%s: User-Agent %q, want %q", tc.build, ua, want)
		}
		t.Logf("%s:\n%s", tc.build, platformLines(t, sb.String()))
	}
	// The zero request names this build's platform.
	var b bytes.Buffer
	if _, err := (&SchedulerRequest{}).WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	if got, want := platformLines(t, b.String()), "    <platform_name>"+platform.This()+"</platform_name>"; got != want {
		t.Errorf("zero request: %q, want %q", got, want)
	}
}
