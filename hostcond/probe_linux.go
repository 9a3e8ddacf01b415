package hostcond

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// IdleSeconds is the time since the last user input, or -1 when no input
// device can be seen (containers, servers without consoles).
//
// On Linux it is the newest access time of the terminals and input
// devices, as the C++ client's all_tty_idle / device_idle checks with
// check_all_logins set:
//   - /dev/pts/* (ssh logins, terminal windows) and /dev/tty[1-63]
//     (text consoles): the tty layer stamps the access time itself on
//     every read of typed input (8-second granularity), whatever the
//     mount options, so these are exact;
//   - /dev/input/event*, /dev/input/mice, /dev/input/mouse*: their access
//     time is the VFS's, so it follows /dev's mount options. Under
//     relatime (the usual default) it moves at most once a day, under
//     noatime never; only strictatime makes it exact.
//
// Input in a graphical session (X11 or Wayland) is therefore only seen
// through terminal windows and, with strictatime, the input devices:
// the X screensaver extension needs cgo and libXss, which boincd does
// not use. A stale device time only makes the user look idle longer,
// never active when they are not.
//
// It lists the device nodes on every call; IdleProbe is the one to call
// periodically.
func IdleSeconds() float64 {
	return idleSecondsIn("/dev", time.Now())
}

// IdleDeviceRefresh is how often IdleProbe lists the terminals and input
// devices again. Between listings it only stats the nodes it knows: a
// glob of /dev/pts, 63 ttys and /dev/input every second cost about 70
// system calls a second. A terminal opened since the last listing (a new
// ssh login) is seen at most this late.
const IdleDeviceRefresh = time.Minute

// IdleProbe answers IdleSeconds from the device nodes it listed last,
// listing them again every IdleDeviceRefresh and as soon as one is gone.
// It is not safe for concurrent use: the daemon's owner goroutine owns it.
type IdleProbe struct {
	dev     string
	devices []string
	listed  time.Time
}

// NewIdleProbe returns a probe of the host's /dev.
func NewIdleProbe() *IdleProbe { return &IdleProbe{dev: "/dev"} }

// IdleSeconds is the time since the last user input at now, or -1 when
// no input device can be seen; see the package's IdleSeconds.
func (p *IdleProbe) IdleSeconds(now time.Time) float64 {
	if p.listed.IsZero() || now.Sub(p.listed) >= IdleDeviceRefresh || now.Before(p.listed) {
		p.devices, p.listed = idleDevices(p.dev), now
	}
	idle, gone := newestAccess(p.devices, now)
	if gone {
		// A closed terminal: list again next time, so its replacement
		// (the same pts number reused) is not missed for a minute.
		p.listed = time.Time{}
	}
	return idle
}

var idleDevicePatterns = []string{
	"pts/[0-9]*",
	"tty[1-9]", "tty[1-5][0-9]", "tty6[0-3]",
	"input/event*", "input/mice", "input/mouse*",
}

func idleSecondsIn(dev string, now time.Time) float64 {
	idle, _ := newestAccess(idleDevices(dev), now)
	return idle
}

// idleDevices lists the device nodes whose access time is user input.
func idleDevices(dev string) []string {
	var out []string
	for _, pat := range idleDevicePatterns {
		names, err := filepath.Glob(filepath.Join(dev, pat))
		if err != nil {
			continue
		}
		out = append(out, names...)
	}
	return out
}

// newestAccess is the idle time from the newest access time of devices
// (-1 when none can be read); gone is whether one of them has vanished.
func newestAccess(devices []string, now time.Time) (idle float64, gone bool) {
	var newest time.Time
	found := false
	for _, name := range devices {
		var st syscall.Stat_t
		if err := syscall.Stat(name, &st); err != nil {
			gone = gone || errors.Is(err, syscall.ENOENT)
			continue
		}
		at := time.Unix(int64(st.Atim.Sec), int64(st.Atim.Nsec))
		if !found || at.After(newest) {
			newest, found = at, true
		}
	}
	if !found {
		return -1, gone
	}
	idle = now.Sub(newest).Seconds()
	if idle < 0 {
		return 0, gone
	}
	return idle, gone
}

// OnBattery reports whether the host runs on batteries, from
// /sys/class/power_supply (hostinfo_unix.cpp's sysfs method): no
// external supply (Mains, USB…) is online and a system battery is
// discharging. Batteries of peripherals (scope "Device", e.g. a wireless
// mouse) do not count. Anything unreadable counts as "not on batteries".
func OnBattery() bool {
	return onBatteryIn("/sys/class/power_supply")
}

func onBatteryIn(dir string) bool {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	discharging := false
	for _, e := range entries {
		base := filepath.Join(dir, e.Name())
		read := func(name string) string {
			b, err := os.ReadFile(filepath.Join(base, name))
			if err != nil {
				return ""
			}
			return strings.TrimSpace(string(b))
		}
		switch read("type") {
		case "Battery":
			if read("scope") != "Device" && read("status") == "Discharging" {
				discharging = true
			}
		case "":
		default:
			if read("online") == "1" {
				return false
			}
		}
	}
	return discharging
}
