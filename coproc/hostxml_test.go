package coproc

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/boincd/boincd/boinc"
	"github.com/boincd/boincd/rpcclient"
)

// sharedFixtures are the BOINC 7.20 captures, kept in the repository
// (testdata/ at the module root) so a clone alone runs every test.
const sharedFixtures = "../testdata/boinc-7.20"

var hostInfoBlock = regexp.MustCompile(`(?s)<host_info>\n.*?</host_info>\n`)

// goldenHostInfos returns every <host_info> block the real client wrote:
// the testdata copies (request and client_state forms) and each scheduler
// request, state file and GUI RPC reply of the captures.
func goldenHostInfos(t *testing.T) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	files, _ := filepath.Glob("testdata/host_info_*.xml")
	for _, pat := range []string{"scheduler/*request*.xml", "client_files/client_state_*.xml", "guirpc/*.s2c.bin"} {
		m, _ := filepath.Glob(filepath.Join(sharedFixtures, pat))
		files = append(files, m...)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, blk := range hostInfoBlock.FindAll(b, -1) {
			out[f+"#"+string(rune('0'+i))] = blk
		}
	}
	if len(out) < 2 {
		t.Fatalf("found only %d host_info blocks", len(out))
	}
	return out
}

// TestWriteHostInfoGolden reads each real client's <host_info> and writes
// it back: the bytes must be identical.
func TestWriteHostInfoGolden(t *testing.T) {
	for name, want := range goldenHostInfos(t) {
		t.Run(name, func(t *testing.T) {
			h, opts, err := ParseHostInfo(bytes.NewReader(want))
			if err != nil {
				t.Fatal(err)
			}
			if h.PNCPUs != 2 || h.PVendor != "GenuineIntel" || h.OSName != "Linux Debian" || h.MCache != 272629760 {
				t.Fatalf("parsed %+v", h)
			}
			var got bytes.Buffer
			if err := WriteHostInfo(&got, h, opts); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.Bytes(), want) {
				t.Fatalf("mismatch\n got: %s\nwant: %s", got.Bytes(), want)
			}
		})
	}
}

// TestWriteHostInfoFromProbeValues builds the captured host from the
// values a probe of that machine produces (parseCPUInfo on its
// /proc/cpuinfo, linuxOSNames on its os-release) and checks the request
// form against the capture.
func TestWriteHostInfoFromProbeValues(t *testing.T) {
	want, err := os.ReadFile("testdata/host_info_request.xml")
	if err != nil {
		t.Fatal(err)
	}
	ci, err := parseCPUInfo(strings.NewReader(fixtureCPUInfo), false)
	if err != nil {
		t.Fatal(err)
	}
	osRel := parseEnvFile([]byte("PRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nNAME=\"Debian GNU/Linux\"\nID=debian\n"))
	osName, osVersion := linuxOSNames(osRel, nil, "6.18.44-fc-v669", "2.36")
	h := boinc.Host{
		Timezone: 0, DomainName: "vm", IPAddr: "127.0.0.1", HostCPID: "b7bf3b34162c2edc3003abbdc50384b1",
		PNCPUs: 2, PVendor: ci.vendor, PModel: ci.model, PFeatures: ci.features,
		PFpops: 1e9, PIops: 1e9, PMembw: 1e9, PCalculated: 1795268541.552086,
		MNBytes: 25276502016, MCache: ci.cache, MSwap: 0,
		DTotal: 270553174016, DFree: 84384870400,
		OSName: osName, OSVersion: osVersion,
	}
	var got bytes.Buffer
	if err := WriteHostInfo(&got, h, HostInfoOptions{}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), want) {
		t.Fatalf("mismatch\n got: %s\nwant: %s", got.Bytes(), want)
	}

	// rpcclient writes host_info into requests itself; it must agree.
	var req bytes.Buffer
	if _, err := (&rpcclient.SchedulerRequest{Host: h}).WriteTo(&req); err != nil {
		t.Fatal(err)
	}
	if blk := hostInfoBlock.Find(req.Bytes()); !bytes.Equal(blk, want) {
		t.Fatalf("rpcclient's host_info differs\n got: %s\nwant: %s", blk, want)
	}
}

func TestWriteHostInfoVariants(t *testing.T) {
	h := boinc.Host{DomainName: "n<&>", IPAddr: "10.0.0.1", PVendor: "V", PModel: "Caf\u00e9\tX\x01", OSName: "L", PFpops: 1.5}
	tests := []struct {
		name      string
		opts      HostInfoOptions
		contains  []string
		excludes  []string
		roundTrip bool
		docker    bool // the host has podman 4.9.3
	}{
		{
			name:      "escaping as xml_escape",
			contains:  []string{"<domain_name>n&lt;&amp;></domain_name>", "<p_model>Caf&#195;&#169;&#9;X</p_model>", "<p_fpops>1.500000</p_fpops>"},
			roundTrip: false, // the dropped control byte cannot come back
		},
		{
			name:      "suppress_net_info",
			opts:      HostInfoOptions{SuppressNetInfo: true},
			excludes:  []string{"domain_name", "ip_addr"},
			roundTrip: true,
		},
		{
			name: "optional elements and coprocs in state-file form",
			opts: HostInfoOptions{
				VMExtensionsDisabled: true, WSLAvailable: true, ProductName: "Board", MACAddress: "aa:bb", VirtualBoxVersion: "7.0.10",
				IncludeCoprocs: true, CoprocsXML: "<coproc_cuda>\n   <count>1</count>\n</coproc_cuda>\n",
			},
			contains: []string{
				"<p_vm_extensions_disabled>1</p_vm_extensions_disabled>", "<wsl_available>1</wsl_available>",
				"    <wsl_available>1</wsl_available>\n    <product_name>Board</product_name>\n    <mac_address>aa:bb</mac_address>\n    <virtualbox_version>7.0.10</virtualbox_version>\n    <coprocs>\n<coproc_cuda>\n   <count>1</count>\n</coproc_cuda>\n    </coprocs>\n</host_info>\n",
			},
			roundTrip: true,
		},
		{
			// HOST_INFO::write puts the engine after wsl_available and
			// before product_name (PROTOCOLS.md §1.3, host_info #10).
			name:   "container engine",
			docker: true,
			opts:   HostInfoOptions{ProductName: "Board"},
			contains: []string{
				"    <wsl_available>0</wsl_available>\n    <docker_version>4.9.3</docker_version>\n    <docker_type>2</docker_type>\n    <product_name>Board</product_name>\n",
			},
			roundTrip: true,
		},
		{
			name:      "no container engine: neither element",
			excludes:  []string{"docker_version", "docker_type"},
			roundTrip: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hh := h
			if tt.roundTrip {
				hh.PModel = "plain"
			}
			if tt.docker {
				hh.DockerVersion, hh.DockerType = "4.9.3", 2
			}
			var b bytes.Buffer
			if err := WriteHostInfo(&b, hh, tt.opts); err != nil {
				t.Fatal(err)
			}
			for _, s := range tt.contains {
				if !strings.Contains(b.String(), s) {
					t.Errorf("missing %q in\n%s", s, b.String())
				}
			}
			for _, s := range tt.excludes {
				if strings.Contains(b.String(), s) {
					t.Errorf("unexpected %q in\n%s", s, b.String())
				}
			}
			if !tt.roundTrip {
				return
			}
			h2, opts2, err := ParseHostInfo(bytes.NewReader(b.Bytes()))
			if err != nil {
				t.Fatal(err)
			}
			var b2 bytes.Buffer
			if err := WriteHostInfo(&b2, h2, opts2); err != nil {
				t.Fatal(err)
			}
			if b2.String() != b.String() {
				t.Fatalf("round trip differs\n got: %s\nwant: %s", b2.String(), b.String())
			}
		})
	}
}

type hostFailWriter struct{}

func (hostFailWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestWriteHostInfoError(t *testing.T) {
	if err := WriteHostInfo(hostFailWriter{}, boinc.Host{}, HostInfoOptions{}); err == nil || !strings.Contains(err.Error(), "host_info") {
		t.Fatalf("err = %v", err)
	}
}

func TestParseHostInfoErrors(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"no element", "<scheduler_request><hostid>1</hostid></scheduler_request>", "no <host_info>"},
		{"empty", "", "no <host_info>"},
		{"bad number", "<host_info><p_ncpus>two</p_ncpus></host_info>", "parsing host_info"},
		{"truncated", "<host_info><p_ncpus>2</p_ncpus>", "parsing host_info"},
		{"oversized", "<x>" + strings.Repeat("a", maxHostInfoBytes+10) + "</x>", "over"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := ParseHostInfo(strings.NewReader(tt.in))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
		})
	}
	// A reader error is reported, not swallowed.
	_, _, err := ParseHostInfo(io.MultiReader(strings.NewReader("<host_info>"), errReader{}))
	if err == nil || !strings.Contains(err.Error(), "boom") {
		t.Fatalf("err = %v", err)
	}
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errors.New("boom") }
