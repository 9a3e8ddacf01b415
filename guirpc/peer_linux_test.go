package guirpc

import (
	"net"
	"os"
	"testing"
)

// TestLocalPeerUID: the kernel names the uid of a loopback client.
func TestLocalPeerUID(t *testing.T) {
	for _, network := range []string{"tcp4", "tcp6"} {
		addr := "127.0.0.1:0"
		if network == "tcp6" {
			addr = "[::1]:0"
		}
		ln, err := net.Listen(network, addr)
		if err != nil {
			t.Logf("%s: %v", network, err)
			continue
		}
		c, err := net.Dial(network, ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		s, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		uid, err := localPeerUID(s.RemoteAddr().(*net.TCPAddr), s.LocalAddr().(*net.TCPAddr))
		if err != nil || uid != uint32(os.Getuid()) {
			t.Errorf("%s: localPeerUID = %d, %v; want %d", network, uid, err, os.Getuid())
		}
		c.Close()
		s.Close()
		ln.Close()
	}
}
