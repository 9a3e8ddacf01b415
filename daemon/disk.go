package daemon

import (
	"os"
	"path/filepath"
	"strconv"

	"github.com/boincd/boincd/boinc"
	"github.com/boincd/boincd/rpcclient"
)

// giga is the C++ client's GIGA (2^30): its "GB" disk preferences are
// binary gigabytes, and the share a server is told must match.
const giga = 1 << 30

// diskProject is what the disk shares of a project depend on.
type diskProject struct {
	ResourceShare float64
	Usage         float64 // bytes allocated to it, slots of its tasks included
}

// diskShares is the 7.20 client's get_disk_shares (client/cs_prefs.cpp,
// checked against its binary and reference requests): each project gets
// a disk resource share of its resource share plus a tenth of the largest
// one, so that a backup project still gets room. A project using no more
// than its quota (allowed × its disk share over the total resource share)
// is given that quota; the space the others leave goes to the "greedy"
// ones over their quota, in proportion to their disk shares. The sums do
// not add up to allowed: a single project is told 1.1 × allowed, as the
// C++ client tells it. boincd keeps no desired_disk_usage, so a project's
// desire is its usage.
func diskShares(allowed float64, ps []diskProject) []float64 {
	shares := make([]float64, len(ps))
	trs, maxRS := 0.0, 0.0
	for _, p := range ps {
		trs += p.ResourceShare
		maxRS = max(maxRS, p.ResourceShare)
	}
	if trs == 0 {
		// The C++ client divides by zero here and writes inf, which the
		// server stores as 0 (DB_HOST's finite check): say 0 outright.
		return shares
	}
	maxRS *= 0.1
	drs := make([]float64, len(ps))
	// The reciprocal multiplied, not a division: the C++ client's
	// arithmetic, so the shares match it to the last digit.
	inv := 1.0 / trs
	greedyDRS, nonGreedyUse := 0.0, 0.0
	for i, p := range ps {
		drs[i] = p.ResourceShare + maxRS
		if p.Usage > inv*drs[i]*allowed {
			greedyDRS += drs[i]
		} else {
			nonGreedyUse += p.Usage
		}
	}
	greedyAllowed := allowed - nonGreedyUse
	invGreedy := 1.0 / greedyDRS
	for i, p := range ps {
		if quota := inv * drs[i] * allowed; quota >= p.Usage {
			shares[i] = quota
		} else {
			shares[i] = drs[i] * greedyAllowed * invGreedy
		}
	}
	return shares
}

// requestDiskUsage is <disk_usage> for a scheduler request to project url,
// counted as the C++ client's get_disk_usages does: a project uses its
// directory plus the slots of its tasks, and BOINC as a whole uses all
// projects plus the files at the top of the data directory.
func (d *Daemon) requestDiskUsage(url string) rpcclient.DiskUsage {
	projects := d.st.sortedProjects()
	use := make(map[string]float64, len(projects))
	for _, p := range projects {
		use[p.MasterURL] = dirSize(d.projectDir(p.MasterURL))
	}
	for _, r := range d.st.results {
		if _, ok := use[r.ProjectURL]; ok && r.Slot >= 0 && r.Phase == boinc.PhaseComputing {
			use[r.ProjectURL] += dirSize(filepath.Join(d.opt.DataDir, "slots", strconv.Itoa(r.Slot)))
		}
	}
	total := 0.0
	dps := make([]diskProject, len(projects))
	for i, p := range projects {
		total += use[p.MasterURL]
		dps[i] = diskProject{ResourceShare: p.ResourceShare, Usage: use[p.MasterURL]}
	}
	total += topFilesSize(d.opt.DataDir)
	// The same d_total and d_free the request's <host_info> carries.
	allowed := diskAllowed(d.host.DTotal, d.host.DFree, total,
		prefsView{d.prefs.DiskMaxUsedGB, d.prefs.DiskMaxUsedPct, d.prefs.DiskMinFreeGB})
	du := rpcclient.DiskUsage{Total: total, Project: use[url]}
	for i, share := range diskShares(allowed, dps) {
		if projects[i].MasterURL == url {
			du.Share = share
		}
	}
	return du
}

// topFilesSize is the allocated size of the files directly in dir, not in
// its subdirectories (dir_size_alloc(".", size, false)).
func topFilesSize(dir string) float64 {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	n := 0.0
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		if info, err := e.Info(); err == nil {
			n += allocSize(info)
		}
	}
	return n
}
