package daemon

import (
	"time"

	"github.com/boincd/boincd/guirpc"
)

// diskUsageMaxAge is how old the projects' disk usage in get_state and
// get_project_status may be. The C++ client shows the figure its last
// disk check measured too; get_disk_usage always measures afresh.
const diskUsageMaxAge = time.Minute

// guiDiskUsage is what the last walk measured (owner goroutine state).
type guiDiskUsage struct {
	at       time.Time
	projects map[string]float64 // master URL → bytes allocated
}

// diskWalk is what a disk-usage walk needs, copied out of the client
// state so that the walk runs off the owner goroutine: with tens of
// thousands of files it takes longer than a GUI reply may hold the loop.
type diskWalk struct {
	dataDir  string
	projects []string          // master URLs, in the order of the reply
	dirs     map[string]string // master URL → project directory
	limits   prefsView
	total    float64 // DTotal, DFree of the host
	free     float64
}

// diskMeasured is a walk's result, for the owner loop's cache.
type diskMeasured struct {
	at       time.Time
	projects map[string]float64
	used     float64 // the whole data directory
}

func (d *Daemon) newDiskWalk() diskWalk {
	w := diskWalk{
		dataDir: d.opt.DataDir, dirs: map[string]string{},
		limits: prefsView{d.prefs.DiskMaxUsedGB, d.prefs.DiskMaxUsedPct, d.prefs.DiskMinFreeGB},
		total:  d.host.DTotal, free: d.host.DFree,
	}
	for _, p := range d.st.sortedProjects() {
		w.projects = append(w.projects, p.MasterURL)
		w.dirs[p.MasterURL] = d.projectDir(p.MasterURL)
	}
	return w
}

func (w *diskWalk) measure() diskMeasured {
	m := diskMeasured{at: time.Now(), projects: make(map[string]float64, len(w.dirs))}
	for url, dir := range w.dirs {
		m.projects[url] = dirSize(dir)
	}
	m.used = dirSize(w.dataDir)
	return m
}

// fillDiskUsage puts a fresh measurement into a GUI reply.
func fillDiskUsage(st *guirpc.State, w *diskWalk, m *diskMeasured) {
	projUse := 0.0
	for i := range st.Projects {
		p := &st.Projects[i]
		p.DiskUsage = m.projects[p.MasterURL]
	}
	st.DiskUsage.Projects = st.DiskUsage.Projects[:0]
	for _, url := range w.projects {
		b := m.projects[url]
		projUse += b
		st.DiskUsage.Projects = append(st.DiskUsage.Projects, guirpc.ProjectDisk{URL: url, Bytes: b})
	}
	st.DiskUsage.Boinc = max(m.used-projUse, 0)
	// The same rule the disk_limit_reached warning and work fetch use.
	st.DiskUsage.Allowed = min(w.total, diskAllowed(w.total, w.free, m.used, w.limits))
}

func (d *Daemon) handleDiskMeasured(m diskMeasured) {
	if m.at.After(d.guiDisk.at) {
		d.guiDisk = guiDiskUsage{at: m.at, projects: m.projects}
	}
}
