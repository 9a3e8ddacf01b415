package boincapi

import (
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
)

// Trickle messages (api/boinc_api.cpp boinc_send_trickle_up,
// boinc_receive_trickle_down; lib/app_ipc.h). The app writes a trickle-up
// into TrickleUpFileName in its slot and says so on the trickle_up
// channel; the client moves the file to the project directory and sends
// it with the next scheduler request. A trickle-down from the server is
// written into the slot as "trickle_down_<time>" and announced on the
// trickle_down channel.
const (
	// TrickleUpFileName is the slot file boinc_send_trickle_up writes
	// (TRICKLE_UP_FILENAME).
	TrickleUpFileName = "trickle_up.xml"
	// TrickleDownPrefix starts the slot files the client writes for
	// trickle-downs; the API takes any file whose name contains it.
	TrickleDownPrefix = "trickle_down"
	// UploadFileReqPrefix starts the slot files boinc_upload_file writes
	// to ask for an intermediate upload (UPLOAD_FILE_REQ_PREFIX).
	UploadFileReqPrefix = "boinc_ufr_"
	// UploadFileStatusPrefix starts the slot files the client writes
	// when such an upload ended (UPLOAD_FILE_STATUS_PREFIX).
	UploadFileStatusPrefix = "boinc_ufs_"
)

// Messages of the trickle channels.
const (
	// App → client on TrickleUp (api/boinc_api.cpp send_trickle_up_msg).
	MsgHaveNewTrickleUp  = "<have_new_trickle_up/>"
	MsgHaveNewUploadFile = "<have_new_upload_file/>"
	// Client → app on TrickleDown (ACTIVE_TASK_SET::send_trickle_downs).
	MsgHaveTrickleDown  = "<have_trickle_down/>"
	MsgUploadFileStatus = "<upload_file_status/>"
)

// SendTrickleUp writes a trickle-up message as boinc_send_trickle_up
// does: "<variety>V</variety>\n" followed by text, which is the app's
// own XML. The timer tells the client at its next status tick. A
// standalone app only writes the file.
func (a *App) SendTrickleUp(variety, text string) error {
	body := fmt.Sprintf("<variety>%s</variety>\n%s", variety, text)
	if err := os.WriteFile(a.path(TrickleUpFileName), []byte(body), 0o644); err != nil {
		return fmt.Errorf("send trickle-up: %w", err)
	}
	a.mu.Lock()
	a.newTrickleUp = true
	a.mu.Unlock()
	return nil
}

// ReceiveTrickleDown returns the name of a trickle-down file in the slot
// (boinc_receive_trickle_down), or false when there is none. The app
// reads the file and deletes it. As the C API, the slot is scanned at the
// first call (files left from an earlier run) and then only after the
// client announced a new one.
func (a *App) ReceiveTrickleDown() (string, bool) {
	a.mu.Lock()
	a.handleTrickleDowns = true
	have := a.haveTrickleDown
	a.mu.Unlock()
	if !have {
		return "", false
	}
	dir := a.dir
	if dir == "" {
		dir = "."
	}
	entries, err := os.ReadDir(dir)
	if err == nil {
		names := make([]string, 0, len(entries))
		for _, e := range entries {
			if strings.Contains(e.Name(), TrickleDownPrefix) && !e.IsDir() {
				names = append(names, e.Name())
			}
		}
		sort.Strings(names)
		if len(names) > 0 {
			return names[0], true
		}
	}
	a.mu.Lock()
	a.haveTrickleDown = false
	a.mu.Unlock()
	return "", false
}

// trickleTick is the timer's share of the trickle channels: announce a
// new trickle-up (send_trickle_up_msg) and take the client's
// trickle-down notice (handle_trickle_down_msg).
func (a *App) trickleTick(status bool) {
	a.mu.Lock()
	up, upload, listen := a.newTrickleUp, a.newUploadFile, a.handleTrickleDowns
	a.mu.Unlock()
	if listen {
		if msg, ok, err := a.shm.Receive(TrickleDown); err != nil {
			fmt.Fprintf(a.stderr, "boincapi: %v\n", err)
		} else if ok && HasTag(msg, MsgHaveTrickleDown) {
			a.mu.Lock()
			a.haveTrickleDown = true
			a.mu.Unlock()
		}
	}
	if status && (up || upload) {
		msg := ""
		if up {
			msg += MsgHaveNewTrickleUp + "\n"
		}
		if upload {
			msg += MsgHaveNewUploadFile + "\n"
		}
		sent, err := a.shm.Send(TrickleUp, msg)
		if err != nil {
			fmt.Fprintf(a.stderr, "boincapi: %v\n", err)
		}
		if sent {
			a.mu.Lock()
			a.newTrickleUp, a.newUploadFile = false, false
			a.mu.Unlock()
		}
	}
}

// UploadFile asks the client to upload an output file now, before the
// app ends (boinc_upload_file): the file named by its logical name must
// be complete. UploadStatus tells when the upload is over.
func (a *App) UploadFile(logical string) error {
	if err := os.WriteFile(a.path(UploadFileReqPrefix+logical), nil, 0o644); err != nil {
		return fmt.Errorf("upload %s: %w", logical, err)
	}
	a.mu.Lock()
	a.newUploadFile = true
	a.handleTrickleDowns = true // the status comes on the same channel
	a.mu.Unlock()
	return nil
}

// UploadStatus is the status of an upload UploadFile asked for, from the
// boinc_ufs_<name> file the client writes when it is over
// (boinc_upload_status): 0 for success, a BOINC error number otherwise;
// ok is false while the upload is not over.
func (a *App) UploadStatus(logical string) (status int, ok bool) {
	b, err := os.ReadFile(a.path(UploadFileStatusPrefix + logical))
	if err != nil {
		return 0, false
	}
	s := string(b)
	i, j := strings.Index(s, "<status>"), strings.Index(s, "</status>")
	if i < 0 || j < i {
		return 0, false
	}
	n, err := strconv.Atoi(strings.TrimSpace(s[i+len("<status>") : j]))
	if err != nil {
		return 0, false
	}
	return n, true
}
