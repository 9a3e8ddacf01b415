package config

import (
	"strings"
	"testing"
)

// TestWebListen: the dashboard sits on the port after GUI RPC's, on
// loopback, unless web.listen says otherwise.
func TestWebListen(t *testing.T) {
	for _, tc := range []struct {
		web     Web
		gui     string
		want    string
		comment string
	}{
		{Web{}, "127.0.0.1:31416", "127.0.0.1:31417", "default"},
		{Web{}, "127.0.0.1:0", "127.0.0.1:0", "tests: any free port"},
		{Web{}, "0.0.0.0:5000", "127.0.0.1:5001", "remote GUI RPC does not make the dashboard remote"},
		{Web{}, "[::1]:31416", "[::1]:31417", "IPv6 loopback"},
		{Web{}, "off", "127.0.0.1:31417", "GUI RPC off"},
		{Web{Listen: "0.0.0.0:8443"}, "127.0.0.1:31416", "0.0.0.0:8443", "configured"},
	} {
		if got := tc.web.WebListen(tc.gui); got != tc.want {
			t.Errorf("%s: WebListen(%q) = %q, want %q", tc.comment, tc.gui, got, tc.want)
		}
	}
}

// TestWebConfig: a dashboard beyond loopback needs TLS; a malformed
// listen address is refused at load with its line.
func TestWebConfig(t *testing.T) {
	for _, tc := range []struct{ toml, wantErr string }{
		{"[web]\nenabled = false\n", ""},
		{"[web]\nlisten = \"127.0.0.1:8080\"\n", ""},
		{"[web]\nlisten = \"0.0.0.0:8443\"\ntls_cert = \"/c.pem\"\ntls_key = \"/k.pem\"\n", ""},
		{"[web]\nlisten = \"0.0.0.0:8443\"\n", "x.toml:2: web.listen \"0.0.0.0:8443\" is not loopback: set web.tls_cert and web.tls_key"},
		{"[web]\nlisten = \"8443\"\n", "x.toml:2: web.listen \"8443\": want HOST:PORT"},
		{"[web]\nlisten = \"off\"\n", "web.enabled = false"},
	} {
		c, err := Parse("x.toml", []byte(tc.toml))
		if err == nil {
			err = c.finish("/tmp")
		}
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("%q: %v", tc.toml, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%q: %v, want %q", tc.toml, err, tc.wantErr)
		}
	}
	if !Default().Web.Enabled {
		t.Error("the dashboard is off by default")
	}
}
