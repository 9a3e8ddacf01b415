package rpcclient

import (
	"net"
	"net/http"
	"net/url"
	"strconv"

	"github.com/boincd/boincd/boinc"
)

// ProxyFunc is the http.Transport proxy rule for the proxy settings that
// current returns at the time of each request (nil or inactive: none),
// following the C++ client's setupProxyCurl: an HTTP proxy when
// use_http_proxy is set (with basic credentials when use_http_auth is),
// otherwise a SOCKS5 proxy when use_socks_proxy is, and a direct
// connection for hosts on no_proxy. Without settings of its own it falls
// back to the environment (http_proxy, https_proxy, no_proxy), as the C++
// client does.
//
// SOCKS5 names are always resolved by the proxy (Go's transport treats
// socks5 as socks5h), which leaks less than socks5_remote_dns 0 would.
func ProxyFunc(current func() *boinc.ProxyInfo) func(*http.Request) (*url.URL, error) {
	return func(req *http.Request) (*url.URL, error) {
		p := current()
		if p == nil || !p.Active() {
			return http.ProxyFromEnvironment(req)
		}
		if p.Bypass(req.URL.Hostname()) {
			return nil, nil
		}
		return proxyURL(p), nil
	}
}

func proxyURL(p *boinc.ProxyInfo) *url.URL {
	if p.UseHTTPProxy && p.HTTPServerName != "" {
		u := &url.URL{Scheme: "http", Host: hostPort(p.HTTPServerName, p.HTTPServerPort)}
		if p.UseHTTPAuth && p.HTTPUserName != "" {
			u.User = url.UserPassword(p.HTTPUserName, p.HTTPUserPasswd)
		}
		return u
	}
	u := &url.URL{Scheme: "socks5", Host: hostPort(p.SOCKSServerName, p.SOCKSServerPort)}
	if p.SOCKS5UserName != "" {
		u.User = url.UserPassword(p.SOCKS5UserName, p.SOCKS5UserPasswd)
	}
	return u
}

// hostPort joins a server name as volunteers type it (often with a
// scheme, "http://proxy.lan", or a port of its own) with the port field.
func hostPort(name string, port int) string {
	if u, err := url.Parse(name); err == nil && u.Host != "" {
		name = u.Host
	}
	if _, _, err := net.SplitHostPort(name); err == nil {
		return name
	}
	if port <= 0 {
		port = 80
	}
	return net.JoinHostPort(name, strconv.Itoa(port))
}
