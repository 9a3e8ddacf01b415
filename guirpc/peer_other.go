//go:build !linux

package guirpc

import (
	"errors"
	"net"
)

// localPeerUID is Linux only; elsewhere all loopback peers are one peer.
func localPeerUID(peer, local *net.TCPAddr) (uint32, error) {
	return 0, errors.New("peer uid lookup not supported on this system")
}
