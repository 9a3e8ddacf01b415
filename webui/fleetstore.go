package webui

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/boincd/boincd/guirpc/client"
	"github.com/boincd/boincd/internal/atomicfile"
)

// FleetFile is the fleet's file in the data directory: the other hosts
// the dashboard shows, each with its GUI RPC password, so it is written
// 0600 like gui_rpc_auth.cfg.
const FleetFile = "fleet.json"

// Fleet limits: a form's fields and the number of hosts (each has a
// poller and a card on the page).
const (
	maxFleetHosts   = 64
	maxHostNameLen  = 100
	maxPasswordLen  = 256
	fleetFileFormat = 1
)

// FleetHost is one other host. Password never leaves the store but to
// authorize the GUI RPC connection: no page, log line or error shows it.
type FleetHost struct {
	// ID names the host in forms; random, so that a form says nothing
	// about the host and a stale form cannot reach a host added later
	// under the same address.
	ID string `json:"id"`
	// Name is what the page calls it; the address when none was given.
	Name     string `json:"name"`
	Addr     string `json:"addr"` // host:port
	Password string `json:"password"`
}

// String and LogValue name the host without its password, so that
// printing or logging a FleetHost cannot leak it.
func (h FleetHost) String() string { return h.Name + " (" + h.Addr + ")" }

// LogValue is the host's name and address.
func (h FleetHost) LogValue() slog.Value {
	return slog.GroupValue(slog.String("name", h.Name), slog.String("addr", h.Addr))
}

type fleetFile struct {
	Format int         `json:"format"`
	Hosts  []FleetHost `json:"hosts"`
}

// Fleet is the stored list of other hosts. It is safe for concurrent
// use; every change is written to the file before it is visible.
type Fleet struct {
	path string

	mu    sync.Mutex
	hosts []FleetHost
}

// ErrFleetFull is returned by Add beyond maxFleetHosts hosts.
var ErrFleetFull = fmt.Errorf("the fleet has %d hosts, the most it takes", maxFleetHosts)

// OpenFleet reads DIR/fleet.json (no file: an empty fleet). A file that
// does not parse is renamed aside (fleet.json.bad-TIME) so that nothing
// in it is lost or overwritten by the next change; OpenFleet then
// returns an empty, usable fleet and an error that names both files.
func OpenFleet(dir string) (*Fleet, error) {
	f := &Fleet{path: filepath.Join(dir, FleetFile)}
	data, err := os.ReadFile(f.path)
	if errors.Is(err, fs.ErrNotExist) {
		return f, nil
	}
	if err != nil {
		return nil, fmt.Errorf("fleet file %s: %w", f.path, err)
	}
	hosts, perr := parseFleet(data)
	if perr == nil {
		f.hosts = hosts
		return f, nil
	}
	aside := f.path + ".bad-" + time.Now().UTC().Format("20060102T150405Z")
	if err := os.Rename(f.path, aside); err != nil {
		return nil, fmt.Errorf("fleet file %s is unreadable (%v) and cannot be set aside: %w", f.path, perr, err)
	}
	return f, fmt.Errorf("fleet file %s is unreadable (%v): kept as %s, starting with no other hosts", f.path, perr, aside)
}

// parseFleet checks the whole file: a host without an address or with
// a duplicate id would be a host the page cannot show or act on.
func parseFleet(data []byte) ([]FleetHost, error) {
	var ff fleetFile
	d := json.NewDecoder(bytes.NewReader(data))
	d.DisallowUnknownFields()
	if err := d.Decode(&ff); err != nil {
		return nil, err
	}
	if ff.Format != fleetFileFormat {
		return nil, fmt.Errorf("format %d, want %d", ff.Format, fleetFileFormat)
	}
	seen := map[string]bool{}
	for i, h := range ff.Hosts {
		if h.ID == "" || h.Addr == "" || seen[h.ID] {
			return nil, fmt.Errorf("host #%d: missing or repeated id, or no address", i+1)
		}
		if _, _, err := net.SplitHostPort(h.Addr); err != nil {
			return nil, fmt.Errorf("host #%d: address %q: %w", i+1, h.Addr, err)
		}
		seen[h.ID] = true
	}
	return ff.Hosts, nil
}

// Path is the fleet file's path.
func (f *Fleet) Path() string { return f.path }

// Hosts returns a copy of the hosts, in the order they were added.
func (f *Fleet) Hosts() []FleetHost {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.hosts)
}

// Host returns the host with id.
func (f *Fleet) Host(id string) (FleetHost, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, h := range f.hosts {
		if h.ID == id {
			return h, true
		}
	}
	return FleetHost{}, false
}

// Add stores a new host: addr is "host" or "host:port" (port 31416 by
// default), name may be empty.
func (f *Fleet) Add(name, addr, password string) (FleetHost, error) {
	addr = strings.TrimSpace(addr)
	name = strings.TrimSpace(name)
	if addr == "" {
		return FleetHost{}, errors.New("no address")
	}
	if strings.ContainsAny(addr, " /\\@?#") {
		return FleetHost{}, fmt.Errorf("address %q: want host or host:port", addr)
	}
	addr = client.NormalizeAddr(addr)
	if host, port, err := net.SplitHostPort(addr); err != nil || host == "" || port == "" {
		return FleetHost{}, fmt.Errorf("address %q: want host or host:port", addr)
	}
	if name == "" {
		name = addr
	}
	if len(name) > maxHostNameLen {
		return FleetHost{}, fmt.Errorf("name longer than %d characters", maxHostNameLen)
	}
	if len(password) > maxPasswordLen || strings.ContainsAny(password, "\r\n\x00") {
		return FleetHost{}, errors.New("password too long or not one line")
	}
	id := make([]byte, 8)
	_, _ = rand.Read(id) // never fails (crypto/rand)
	h := FleetHost{ID: hex.EncodeToString(id), Name: name, Addr: addr, Password: password}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.hosts) >= maxFleetHosts {
		return FleetHost{}, ErrFleetFull
	}
	for _, o := range f.hosts {
		if o.Addr == addr {
			return FleetHost{}, fmt.Errorf("%s is in the fleet already, as %q", addr, o.Name)
		}
	}
	next := append(slices.Clone(f.hosts), h)
	if err := f.writeLocked(next); err != nil {
		return FleetHost{}, err
	}
	f.hosts = next
	return h, nil
}

// Remove forgets the host with id; false when there was none.
func (f *Fleet) Remove(id string) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	i := slices.IndexFunc(f.hosts, func(h FleetHost) bool { return h.ID == id })
	if i < 0 {
		return false, nil
	}
	next := slices.Delete(slices.Clone(f.hosts), i, i+1)
	if err := f.writeLocked(next); err != nil {
		return false, err
	}
	f.hosts = next
	return true, nil
}

// writeLocked replaces the file so that a crash leaves the old list or
// the new one, never a part, and the file is never readable by others.
func (f *Fleet) writeLocked(hosts []FleetHost) error {
	data, err := json.MarshalIndent(fleetFile{Format: fleetFileFormat, Hosts: hosts}, "", "  ")
	if err != nil {
		return fmt.Errorf("fleet file %s: %w", f.path, err)
	}
	data = append(data, '\n')
	if err := atomicfile.WriteFile(f.path, data, 0o600); err != nil {
		return fmt.Errorf("fleet file: %w", err)
	}
	return nil
}
