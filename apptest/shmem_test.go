package apptest

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/boincd/boincd/boincapi"
)

// TestSharedMemoryMechanisms runs the compiled app directly, outside the
// daemon, once for each mechanism the real 7.20 library can attach to,
// and checks that its app_status messages (with fraction_done) arrive:
//
//   - shm_key -1: the library maps the slot's boinc_mmap_file (what
//     boincd does);
//   - shm_key K: the library attaches the System V segment with key K
//     (what the C++ client does for apps without an API version);
//   - no init_data.xml: the app runs standalone and talks to nobody, the
//     control row showing that the other rows really measure attachment.
//
// See doc.go for why boincd uses the mmap file.
func TestSharedMemoryMechanisms(t *testing.T) {
	t.Parallel()
	app := needAPIApp(t)
	tests := []struct {
		name string
		// setup prepares the segment in the slot directory and returns
		// the shm_key to write (or false for no init_data.xml) and a
		// reader of the app_status channel.
		setup    func(t *testing.T, slot string) (key int, initData bool, recv func() (string, bool))
		attached bool
	}{
		{name: "mmap file (shm_key -1)", attached: true, setup: func(t *testing.T, slot string) (int, bool, func() (string, bool)) {
			shm, err := boincapi.CreateShmem(filepath.Join(slot, boincapi.MmapFileName))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = shm.Close() })
			return -1, true, func() (string, bool) {
				msg, ok, err := shm.Receive(boincapi.AppStatus)
				if err != nil {
					t.Errorf("read app_status: %v", err)
				}
				return msg, ok
			}
		}},
		{name: "System V segment (shm_key K)", attached: true, setup: func(t *testing.T, slot string) (int, bool, func() (string, bool)) {
			key, seg := sysvSegment(t)
			return key, true, func() (string, bool) { return seg.receive(boincapi.AppStatus) }
		}},
		{name: "no init_data.xml (standalone)", attached: false, setup: func(t *testing.T, slot string) (int, bool, func() (string, bool)) {
			shm, err := boincapi.CreateShmem(filepath.Join(slot, boincapi.MmapFileName))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = shm.Close() })
			return 0, false, func() (string, bool) {
				msg, ok, _ := shm.Receive(boincapi.AppStatus)
				return msg, ok
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			slot := t.TempDir()
			key, withInit, recv := tc.setup(t, slot)
			if withInit {
				writeMinimalInitData(t, slot, key)
			}
			if err := os.WriteFile(filepath.Join(slot, "in"), []byte("probe input\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(app, "--seconds", "1")
			cmd.Dir = slot
			if err := cmd.Start(); err != nil {
				t.Fatalf("start app: %v", err)
			}
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()

			var statuses []string
			deadline := time.After(30 * time.Second)
		run:
			for {
				if msg, ok := recv(); ok {
					statuses = append(statuses, msg)
				}
				select {
				case err := <-exited:
					if err != nil {
						t.Fatalf("app exited: %v", err)
					}
					break run
				case <-deadline:
					_ = cmd.Process.Kill()
					<-exited
					t.Fatal("app did not finish within 30 s")
				case <-time.After(50 * time.Millisecond):
				}
			}
			progress := 0
			for _, s := range statuses {
				if f, ok := boincapi.ParseDouble(s, "fraction_done"); ok && f > 0 {
					progress++
				}
			}
			t.Logf("%d app_status messages, %d with fraction_done > 0", len(statuses), progress)
			if tc.attached && progress == 0 {
				stderr, _ := os.ReadFile(filepath.Join(slot, "stderr.txt"))
				t.Fatalf("no progress arrived through the segment; messages %q; stderr:\n%s", statuses, stderr)
			}
			if !tc.attached && len(statuses) > 0 {
				t.Fatalf("standalone app wrote app_status %q", statuses)
			}
		})
	}
}

// writeMinimalInitData writes the init_data.xml fields the API reads at
// start, naming the test process as the client; the library leaves the
// rest at their defaults.
func writeMinimalInitData(t *testing.T, slot string, key int) {
	t.Helper()
	writeInitDataFor(t, slot, key, os.Getpid())
}

// writeInitDataFor is writeMinimalInitData with client_pid clientPID (0:
// no client pid, so the API falls back to the heartbeat timeout).
func writeInitDataFor(t *testing.T, slot string, key, clientPID int) {
	t.Helper()
	body := fmt.Sprintf("<app_init_data>\n<major_version>7</major_version>\n<minor_version>20</minor_version>\n"+
		"<release>5</release>\n<app_version>100</app_version>\n<app_name>apiapp</app_name>\n"+
		"<project_dir>%s</project_dir>\n<boinc_dir>%s</boinc_dir>\n<wu_name>probe</wu_name>\n<result_name>probe_0</result_name>\n"+
		"<shm_key>%d</shm_key>\n<slot>0</slot>\n<client_pid>%d</client_pid>\n<checkpoint_period>60.000000</checkpoint_period>\n"+
		"<fraction_done_start>0.000000</fraction_done_start>\n<fraction_done_end>1.000000</fraction_done_end>\n</app_init_data>\n",
		slot, slot, key, clientPID)
	if err := os.WriteFile(filepath.Join(slot, boincapi.InitDataFileName), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// sysvSeg is a System V shared-memory segment laid out as SHARED_MEM.
type sysvSeg struct{ mem []byte }

// sysvSegment creates a fresh 8192-byte System V segment under an unused
// key, removed when the test ends.
func sysvSegment(t *testing.T) (int, *sysvSeg) {
	t.Helper()
	base := int(uint32(os.Getpid())<<8|uint32(time.Now().UnixNano()&0xff)) & 0x7fffffff
	for i := range 64 {
		key := base + i
		id, err := unix.SysvShmGet(key, boincapi.ShmemSize, unix.IPC_CREAT|unix.IPC_EXCL|0o600)
		if errors.Is(err, unix.EEXIST) {
			continue
		}
		if err != nil {
			t.Skipf("System V shared memory unavailable here: shmget: %v", err)
		}
		mem, err := unix.SysvShmAttach(id, 0, 0)
		if err != nil {
			_, _ = unix.SysvShmCtl(id, unix.IPC_RMID, nil)
			t.Fatalf("shmat: %v", err)
		}
		t.Cleanup(func() {
			if err := unix.SysvShmDetach(mem); err != nil {
				t.Errorf("shmdt: %v", err)
			}
			if _, err := unix.SysvShmCtl(id, unix.IPC_RMID, nil); err != nil {
				t.Errorf("remove System V segment %d: %v", id, err)
			}
		})
		return key, &sysvSeg{mem: mem}
	}
	t.Fatal("no free System V shared-memory key")
	return 0, nil
}

// receive takes the message out of channel c (MSG_CHANNEL::get_msg). The
// head word is read and cleared atomically: the app writes the segment
// from another process.
func (s *sysvSeg) receive(c boincapi.Channel) (string, bool) {
	off := int(c) * boincapi.ChannelSize
	head := (*uint32)(unsafe.Pointer(&s.mem[off]))
	var h [4]byte
	binary.NativeEndian.PutUint32(h[:], atomic.LoadUint32(head))
	if h[0] == 0 {
		return "", false
	}
	body := s.mem[off+1 : off+boincapi.ChannelSize]
	msg := string(body)
	if i := strings.IndexByte(msg, 0); i >= 0 {
		msg = msg[:i]
	}
	h[0] = 0
	atomic.StoreUint32(head, binary.NativeEndian.Uint32(h[:]))
	return msg, true
}
