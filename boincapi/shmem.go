package boincapi

import (
	"encoding/binary"
	"fmt"
	"strings"
)

// Shared-memory layout (lib/app_ipc.h SHARED_MEM): 8 channels of 1024
// bytes. Byte 0 of a channel is the "full" flag, set by the sender and
// cleared by the receiver; bytes 1..1023 hold a NUL-terminated message.
const (
	ChannelSize  = 1024
	NumChannels  = 8
	ShmemSize    = NumChannels * ChannelSize
	MaxMsgLen    = ChannelSize - 2 // flag byte and the terminating NUL
	MmapFileName = "boinc_mmap_file"
)

// Channel is one message channel of the shared memory segment.
type Channel int

const (
	ProcessControlRequest Channel = iota // client → app
	ProcessControlReply                  // unused
	GraphicsRequest                      // unused
	GraphicsReply                        // app → client
	Heartbeat                            // client → app
	AppStatus                            // app → client
	TrickleUp                            // app → client
	TrickleDown                          // client → app
)

var channelNames = [...]string{
	"process_control_request", "process_control_reply", "graphics_request", "graphics_reply",
	"heartbeat", "app_status", "trickle_up", "trickle_down",
}

func (c Channel) String() string {
	if c >= 0 && int(c) < len(channelNames) {
		return channelNames[c]
	}
	return fmt.Sprintf("channel(%d)", int(c))
}

func (c Channel) offset() (int64, error) {
	if c < 0 || int(c) >= NumChannels {
		return 0, fmt.Errorf("shared memory: invalid channel %d", int(c))
	}
	return int64(c) * ChannelSize, nil
}

// region is the platform-specific storage of the segment: a MAP_SHARED
// mapping on Unix (so C++ BOINC apps, which map the same file, see our
// writes), plain file I/O on Windows. loadHead/storeHead access the first
// 4 bytes of a channel as one word so that setting the full flag publishes
// the message written before it (release/acquire on the mapping).
type region interface {
	readAt(p []byte, off int64) error
	writeAt(p []byte, off int64) error
	loadHead(off int64) ([4]byte, error)
	storeHead(off int64, head [4]byte) error
	close() error
}

// Shmem is an open shared-memory segment. It is not safe for concurrent
// use by several goroutines of one process; each side has one user.
type Shmem struct {
	path string
	r    region
}

// Path is the file backing the segment.
func (s *Shmem) Path() string { return s.path }

// Close unmaps the segment. Further use returns errors.
func (s *Shmem) Close() error {
	if s == nil || s.r == nil {
		return nil
	}
	err := s.r.close()
	s.r = nil
	if err != nil {
		return fmt.Errorf("shared memory %s: close: %w", s.path, err)
	}
	return nil
}

func (s *Shmem) region() (region, error) {
	if s == nil || s.r == nil {
		return nil, fmt.Errorf("shared memory: segment is closed")
	}
	return s.r, nil
}

// HasMsg reports whether the channel's full flag is set.
func (s *Shmem) HasMsg(c Channel) (bool, error) {
	r, err := s.region()
	if err != nil {
		return false, err
	}
	off, err := c.offset()
	if err != nil {
		return false, err
	}
	h, err := r.loadHead(off)
	if err != nil {
		return false, fmt.Errorf("shared memory %s: read %s: %w", s.path, c, err)
	}
	return h[0] != 0, nil
}

// Send writes msg into the channel unless it still holds an unread
// message; it reports whether the message was written
// (MSG_CHANNEL::send_msg).
func (s *Shmem) Send(c Channel, msg string) (bool, error) {
	full, err := s.HasMsg(c)
	if err != nil {
		return false, err
	}
	if full {
		return false, nil
	}
	return true, s.Overwrite(c, msg)
}

// Overwrite writes msg into the channel even if it is full
// (MSG_CHANNEL::force_msg).
func (s *Shmem) Overwrite(c Channel, msg string) error {
	r, err := s.region()
	if err != nil {
		return err
	}
	off, err := c.offset()
	if err != nil {
		return err
	}
	if len(msg) > MaxMsgLen {
		return fmt.Errorf("shared memory %s: %s message is %d bytes, limit %d", s.path, c, len(msg), MaxMsgLen)
	}
	if strings.IndexByte(msg, 0) >= 0 {
		return fmt.Errorf("shared memory %s: %s message contains a NUL byte", s.path, c)
	}
	// Body first (from byte 4 on), then the head word carrying the flag
	// and the first three bytes, so a reader never sees the flag before
	// the message.
	var buf [ChannelSize]byte
	copy(buf[1:], msg)
	if end := len(msg) + 2; end > 4 { // message plus its NUL reach past the head word
		if err := r.writeAt(buf[4:end], off+4); err != nil {
			return fmt.Errorf("shared memory %s: write %s: %w", s.path, c, err)
		}
	}
	buf[0] = 1
	if err := r.storeHead(off, [4]byte{buf[0], buf[1], buf[2], buf[3]}); err != nil {
		return fmt.Errorf("shared memory %s: write %s: %w", s.path, c, err)
	}
	return nil
}

// Receive takes the message out of the channel, clearing its full flag.
// ok is false when the channel was empty.
func (s *Shmem) Receive(c Channel) (msg string, ok bool, err error) {
	r, err := s.region()
	if err != nil {
		return "", false, err
	}
	off, err := c.offset()
	if err != nil {
		return "", false, err
	}
	h, err := r.loadHead(off)
	if err != nil {
		return "", false, fmt.Errorf("shared memory %s: read %s: %w", s.path, c, err)
	}
	if h[0] == 0 {
		return "", false, nil
	}
	var buf [ChannelSize]byte
	copy(buf[:4], h[:])
	if err := r.readAt(buf[4:], off+4); err != nil {
		return "", false, fmt.Errorf("shared memory %s: read %s: %w", s.path, c, err)
	}
	body := buf[1:ChannelSize]
	if i := indexByte(body, 0); i >= 0 {
		body = body[:i]
	}
	msg = string(body)
	h[0] = 0
	if err := r.storeHead(off, h); err != nil {
		return "", false, fmt.Errorf("shared memory %s: clear %s: %w", s.path, c, err)
	}
	return msg, true, nil
}

// Reset zeroes every channel (APP_CLIENT_SHM::reset_msgs).
func (s *Shmem) Reset() error {
	r, err := s.region()
	if err != nil {
		return err
	}
	var zero [ShmemSize]byte
	if err := r.writeAt(zero[:], 0); err != nil {
		return fmt.Errorf("shared memory %s: reset: %w", s.path, err)
	}
	return nil
}

func indexByte(b []byte, c byte) int {
	for i, x := range b {
		if x == c {
			return i
		}
	}
	return -1
}

// headWord converts between the 4 head bytes and the native-endian word
// stored atomically in the mapping.
func headWord(h [4]byte) uint32 { return binary.NativeEndian.Uint32(h[:]) }

func headBytes(w uint32) [4]byte {
	var h [4]byte
	binary.NativeEndian.PutUint32(h[:], w)
	return h
}
