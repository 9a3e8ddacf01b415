package boinc

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"strings"
)

// ProxyInfo is the C++ client's PROXY_INFO (lib/proxy_info.cpp): the proxy
// a volunteer set in the Manager (set_proxy_settings) or in cc_config.xml.
// The JSON form is how boincd keeps it in its state store.
type ProxyInfo struct {
	UseHTTPProxy     bool   `xml:"use_http_proxy" json:"use_http_proxy,omitempty"`
	UseSOCKSProxy    bool   `xml:"use_socks_proxy" json:"use_socks_proxy,omitempty"`
	UseHTTPAuth      bool   `xml:"use_http_auth" json:"use_http_auth,omitempty"`
	SOCKSServerName  string `xml:"socks_server_name" json:"socks_server_name,omitempty"`
	SOCKSServerPort  int    `xml:"socks_server_port" json:"socks_server_port"`
	HTTPServerName   string `xml:"http_server_name" json:"http_server_name,omitempty"`
	HTTPServerPort   int    `xml:"http_server_port" json:"http_server_port"`
	SOCKS5UserName   string `xml:"socks5_user_name" json:"socks5_user_name,omitempty"`
	SOCKS5UserPasswd string `xml:"socks5_user_passwd" json:"socks5_user_passwd,omitempty"`
	SOCKS5RemoteDNS  bool   `xml:"socks5_remote_dns" json:"socks5_remote_dns,omitempty"`
	HTTPUserName     string `xml:"http_user_name" json:"http_user_name,omitempty"`
	HTTPUserPasswd   string `xml:"http_user_passwd" json:"http_user_passwd,omitempty"`
	// NoProxy lists hosts reached directly, separated by commas.
	NoProxy      string `xml:"no_proxy" json:"no_proxy,omitempty"`
	NoAutodetect bool   `xml:"no_autodetect" json:"no_autodetect,omitempty"`
}

// DefaultProxyInfo is PROXY_INFO::clear(): no proxy, ports 80.
func DefaultProxyInfo() ProxyInfo { return ProxyInfo{HTTPServerPort: 80, SOCKSServerPort: 80} }

// Active reports whether a proxy is to be used at all.
func (p *ProxyInfo) Active() bool {
	return (p.UseHTTPProxy && p.HTTPServerName != "") || (p.UseSOCKSProxy && p.SOCKSServerName != "")
}

// Bypass reports whether host (without port) is on the no_proxy list: equal
// to an entry, or within an entry's domain ("example.org" and
// ".example.org" both cover "www.example.org"). Case is ignored.
func (p *ProxyInfo) Bypass(host string) bool {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	for _, e := range strings.FieldsFunc(p.NoProxy, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == ';' }) {
		e = strings.ToLower(strings.Trim(e, "."))
		if e == "" {
			continue
		}
		if host == e || strings.HasSuffix(host, "."+e) {
			return true
		}
	}
	return false
}

// ParseProxyInfo reads a <proxy_info> element the way PROXY_INFO::parse
// does: flags are present-or-"1", unknown elements are ignored, a port
// left out is 80 (PROXY_INFO::clear) and 0 is kept as given (boinccmd
// sends it for a proxy that is not set), and a port outside 0–65535 is an
// error naming the element (the C++ client would hand it to libcurl,
// which fails every request).
func ParseProxyInfo(data []byte) (ProxyInfo, error) {
	var raw struct {
		UseHTTPProxy     *flagValue `xml:"use_http_proxy"`
		UseSOCKSProxy    *flagValue `xml:"use_socks_proxy"`
		UseHTTPAuth      *flagValue `xml:"use_http_auth"`
		SOCKSServerName  string     `xml:"socks_server_name"`
		SOCKSServerPort  string     `xml:"socks_server_port"`
		HTTPServerName   string     `xml:"http_server_name"`
		HTTPServerPort   string     `xml:"http_server_port"`
		SOCKS5UserName   string     `xml:"socks5_user_name"`
		SOCKS5UserPasswd string     `xml:"socks5_user_passwd"`
		SOCKS5RemoteDNS  *flagValue `xml:"socks5_remote_dns"`
		HTTPUserName     string     `xml:"http_user_name"`
		HTTPUserPasswd   string     `xml:"http_user_passwd"`
		NoProxy          string     `xml:"no_proxy"`
		NoAutodetect     *flagValue `xml:"no_autodetect"`
	}
	d := xml.NewDecoder(bytes.NewReader(data))
	d.Strict = false
	if err := d.Decode(&raw); err != nil {
		return ProxyInfo{}, fmt.Errorf("proxy_info: %w", err)
	}
	p := ProxyInfo{
		UseHTTPProxy: raw.UseHTTPProxy.on(), UseSOCKSProxy: raw.UseSOCKSProxy.on(), UseHTTPAuth: raw.UseHTTPAuth.on(),
		SOCKSServerName: strings.TrimSpace(raw.SOCKSServerName), HTTPServerName: strings.TrimSpace(raw.HTTPServerName),
		SOCKS5UserName: raw.SOCKS5UserName, SOCKS5UserPasswd: raw.SOCKS5UserPasswd, SOCKS5RemoteDNS: raw.SOCKS5RemoteDNS.on(),
		HTTPUserName: raw.HTTPUserName, HTTPUserPasswd: raw.HTTPUserPasswd,
		NoProxy: strings.TrimSpace(raw.NoProxy), NoAutodetect: raw.NoAutodetect.on(),
	}
	var err error
	if p.HTTPServerPort, err = proxyPort("http_server_port", raw.HTTPServerPort); err != nil {
		return ProxyInfo{}, err
	}
	if p.SOCKSServerPort, err = proxyPort("socks_server_port", raw.SOCKSServerPort); err != nil {
		return ProxyInfo{}, err
	}
	return p, nil
}

// proxyPort reads a port; empty is 80, the C++ client's default.
func proxyPort(tag, v string) (int, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 80, nil
	}
	var n int
	if _, err := fmt.Sscanf(v, "%d", &n); err != nil || n < 0 || n > 65535 {
		return 0, fmt.Errorf("proxy_info: <%s>%s</%s>: not a port (0-65535)", tag, v, tag)
	}
	return n, nil
}

// flagValue is a BOINC boolean element: <x/>, <x>1</x> or <x>0</x>.
type flagValue struct {
	Text string `xml:",chardata"`
}

func (f *flagValue) on() bool {
	if f == nil {
		return false
	}
	t := strings.TrimSpace(f.Text)
	return t == "" || (t != "0" && t != "false")
}
