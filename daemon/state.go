package daemon

import (
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/boincd/boincd/boinc"
	"github.com/boincd/boincd/statefile"
)

// clientState is everything the client knows, owned by the daemon's run
// goroutine. Every mutation goes through a mark* call so the next flush
// commits exactly what changed, in one transaction.
type clientState struct {
	projects map[string]*boinc.Project
	apps     map[string]*boinc.App
	versions map[string]*boinc.AppVersion
	wus      map[string]*boinc.Workunit
	results  map[string]*boinc.Result // add and remove with putResult, deleteResult
	files    map[string]*boinc.FileInfo

	// sorted caches sortedResults: the owner loop asks for it several
	// times a second, and sorting 10,000 results each time cost a core
	// (issue 18's big queue). nil when results changed since.
	sorted []*boinc.Result
}

func newClientState() *clientState {
	return &clientState{
		projects: map[string]*boinc.Project{},
		apps:     map[string]*boinc.App{},
		versions: map[string]*boinc.AppVersion{},
		wus:      map[string]*boinc.Workunit{},
		results:  map[string]*boinc.Result{},
		files:    map[string]*boinc.FileInfo{},
	}
}

func stateFromSnapshot(s *statefile.Snapshot) *clientState {
	cs := newClientState()
	for _, p := range s.Projects {
		cs.projects[p.MasterURL] = p
	}
	for _, a := range s.Apps {
		cs.apps[a.Key()] = a
	}
	for _, v := range s.AppVersions {
		cs.versions[v.Key()] = v
	}
	for _, w := range s.Workunits {
		cs.wus[w.Key()] = w
	}
	for _, r := range s.Results {
		cs.putResult(r)
	}
	for _, f := range s.Files {
		cs.files[f.Key()] = f
	}
	return cs
}

func entityKey(projectURL, name string) string { return projectURL + "\x00" + name }

// The lookups below build their keys in a stack buffer: a map index by
// string(bytes) does not allocate, and the decision pass makes several
// per task (issue 18: 10,000 tasks). The keys are those of entityKey and
// boinc.AppVersionKey.

func (cs *clientState) file(projectURL, name string) *boinc.FileInfo {
	var buf [256]byte
	return cs.files[string(appendEntityKey(buf[:0], projectURL, name))]
}

func (cs *clientState) wuOf(r *boinc.Result) *boinc.Workunit {
	var buf [256]byte
	return cs.wus[string(appendEntityKey(buf[:0], r.ProjectURL, r.WUName))]
}

func (cs *clientState) versionOf(r *boinc.Result) *boinc.AppVersion {
	wu := cs.wuOf(r)
	if wu == nil {
		return nil
	}
	var buf [256]byte
	k := append(buf[:0], r.ProjectURL...)
	for _, part := range [...]string{wu.AppName, r.Platform, r.PlanClass} {
		k = append(k, 0)
		k = append(k, part...)
	}
	k = append(k, 0)
	k = strconv.AppendInt(k, int64(r.VersionNum), 10)
	return cs.versions[string(k)]
}

func appendEntityKey(b []byte, projectURL, name string) []byte {
	b = append(b, projectURL...)
	b = append(b, 0)
	return append(b, name...)
}

// projectsWithVersions is the set of projects that have sent an app
// version: until one has, there is no runtime estimate for its jobs.
func (cs *clientState) projectsWithVersions() map[string]bool {
	out := map[string]bool{}
	for _, v := range cs.versions {
		out[v.ProjectURL] = true
	}
	return out
}

// inputFiles lists every file a result needs before it can run: its app
// version's files and its workunit's inputs.
func (cs *clientState) inputFiles(r *boinc.Result) []*boinc.FileInfo {
	var out []*boinc.FileInfo
	if v := cs.versionOf(r); v != nil {
		for _, ref := range v.FileRefs {
			if f := cs.file(r.ProjectURL, ref.FileName); f != nil {
				out = append(out, f)
			}
		}
	}
	if wu := cs.wuOf(r); wu != nil {
		for _, ref := range wu.InputFiles {
			if f := cs.file(r.ProjectURL, ref.FileName); f != nil {
				out = append(out, f)
			}
		}
	}
	return out
}

// missingFile returns the first file name among refs that the project
// never described with a file_info, or "".
func (cs *clientState) missingFile(projectURL string, refs []boinc.FileRef) string {
	for _, ref := range refs {
		if cs.file(projectURL, ref.FileName) == nil {
			return ref.FileName
		}
	}
	return ""
}

func (cs *clientState) outputFiles(r *boinc.Result) []*boinc.FileInfo {
	var out []*boinc.FileInfo
	for _, ref := range r.OutputFiles {
		if f := cs.file(r.ProjectURL, ref.FileName); f != nil {
			out = append(out, f)
		}
	}
	return out
}

// putResult adds (or replaces) a result.
func (cs *clientState) putResult(r *boinc.Result) {
	cs.results[r.Key()] = r
	cs.sorted = nil
}

// deleteResult removes the result with the key.
func (cs *clientState) deleteResult(key string) {
	delete(cs.results, key)
	cs.sorted = nil
}

// setDeadline changes a result's report deadline, which orders it.
func (cs *clientState) setDeadline(r *boinc.Result, deadline time.Time) {
	r.ReportDeadline = deadline
	cs.sorted = nil
}

// sortedResults returns results in a stable order (deadline, then name), so
// every decision made from the state is deterministic. The slice is
// shared until the results change: callers read it and never modify it.
func (cs *clientState) sortedResults() []*boinc.Result {
	if cs.sorted != nil && len(cs.sorted) == len(cs.results) {
		return cs.sorted
	}
	out := make([]*boinc.Result, 0, len(cs.results))
	for _, r := range cs.results {
		out = append(out, r)
	}
	// Comparing (project URL, name) orders as Key() does ("\x00" sorts
	// first) without building the keys.
	slices.SortFunc(out, func(a, b *boinc.Result) int {
		if c := a.ReportDeadline.Compare(b.ReportDeadline); c != 0 {
			return c
		}
		if c := strings.Compare(a.ProjectURL, b.ProjectURL); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	cs.sorted = out
	return out
}

func (cs *clientState) sortedProjects() []*boinc.Project {
	out := make([]*boinc.Project, 0, len(cs.projects))
	for _, p := range cs.projects {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].MasterURL < out[j].MasterURL })
	return out
}

func (cs *clientState) projectResults(url string) []*boinc.Result {
	var out []*boinc.Result
	for _, r := range cs.sortedResults() {
		if r.ProjectURL == url {
			out = append(out, r)
		}
	}
	return out
}

// fileInUse reports whether any remaining result or app version refers to
// the file, so garbage collection never removes a file still needed.
func (cs *clientState) fileInUse(f *boinc.FileInfo) bool {
	for _, r := range cs.results {
		if r.ProjectURL != f.ProjectURL {
			continue
		}
		for _, ref := range r.OutputFiles {
			if ref.FileName == f.Name {
				return true
			}
		}
		if wu := cs.wuOf(r); wu != nil {
			for _, ref := range wu.InputFiles {
				if ref.FileName == f.Name {
					return true
				}
			}
		}
	}
	for _, v := range cs.versions {
		if v.ProjectURL != f.ProjectURL {
			continue
		}
		for _, ref := range v.FileRefs {
			if ref.FileName == f.Name {
				return true
			}
		}
	}
	return false
}

func hasPrefixKey(key, projectURL string) bool {
	return strings.HasPrefix(key, projectURL+"\x00")
}
