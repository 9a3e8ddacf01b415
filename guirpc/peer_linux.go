package guirpc

import (
	"encoding/binary"
	"errors"
	"net"
	"syscall"
	"time"
)

// localPeerUID returns the uid owning the client end of a loopback TCP
// connection, asked of the kernel with one exact inet_diag lookup
// (NETLINK_SOCK_DIAG, as ss(8) does). All local peers share the loopback
// address; the uid is what tells a science app from the owner's boinccmd.
func localPeerUID(peer, local *net.TCPAddr) (uint32, error) {
	fd, err := syscall.Socket(syscall.AF_NETLINK, syscall.SOCK_DGRAM|syscall.SOCK_CLOEXEC, 4 /* NETLINK_SOCK_DIAG */)
	if err != nil {
		return 0, err
	}
	defer syscall.Close(fd)
	tv := syscall.NsecToTimeval(int64(time.Second))
	_ = syscall.SetsockoptTimeval(fd, syscall.SOL_SOCKET, syscall.SO_RCVTIMEO, &tv)

	family := uint8(syscall.AF_INET)
	src, dst := peer.IP.To4(), local.IP.To4()
	if src == nil || dst == nil {
		family = syscall.AF_INET6
		src, dst = peer.IP.To16(), local.IP.To16()
		if src == nil || dst == nil {
			return 0, errors.New("not an IP address")
		}
	}
	// nlmsghdr (16) + inet_diag_req_v2 (8 + inet_diag_sockid 48).
	req := make([]byte, 16+56)
	binary.NativeEndian.PutUint32(req[0:], uint32(len(req)))
	binary.NativeEndian.PutUint16(req[4:], 20) // SOCK_DIAG_BY_FAMILY
	binary.NativeEndian.PutUint16(req[6:], syscall.NLM_F_REQUEST)
	binary.NativeEndian.PutUint32(req[8:], 1)
	r := req[16:]
	r[0] = family
	r[1] = syscall.IPPROTO_TCP
	binary.NativeEndian.PutUint32(r[4:], 0xffffffff) // every state
	id := r[8:]
	// The socket wanted is the client's: its local end is the peer.
	binary.BigEndian.PutUint16(id[0:], uint16(peer.Port))
	binary.BigEndian.PutUint16(id[2:], uint16(local.Port))
	copy(id[4:20], src)
	copy(id[20:36], dst)
	binary.NativeEndian.PutUint32(id[40:], 0xffffffff) // INET_DIAG_NOCOOKIE
	binary.NativeEndian.PutUint32(id[44:], 0xffffffff)
	if err := syscall.Sendto(fd, req, 0, &syscall.SockaddrNetlink{Family: syscall.AF_NETLINK}); err != nil {
		return 0, err
	}
	buf := make([]byte, 4096)
	n, _, err := syscall.Recvfrom(fd, buf, 0)
	if err != nil {
		return 0, err
	}
	buf = buf[:n]
	if len(buf) < 16 {
		return 0, errors.New("inet_diag: short reply")
	}
	switch typ := binary.NativeEndian.Uint16(buf[4:]); typ {
	case 20:
	case syscall.NLMSG_ERROR:
		if len(buf) >= 20 {
			if e := int32(binary.NativeEndian.Uint32(buf[16:])); e < 0 {
				return 0, syscall.Errno(-e)
			}
		}
		return 0, errors.New("inet_diag: error reply")
	default:
		return 0, errors.New("inet_diag: unexpected reply")
	}
	// inet_diag_msg: 4 bytes, sockid 48, expires, rqueue, wqueue, uid.
	msg := buf[16:]
	if len(msg) < 68 {
		return 0, errors.New("inet_diag: short message")
	}
	return binary.NativeEndian.Uint32(msg[64:]), nil
}
