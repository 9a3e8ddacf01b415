package guirpc

import (
	"fmt"
	"testing"
	"time"

	"github.com/boincd/boincd/boinc"
)

// bigState is a 10,000-task queue as bench/bigqueue builds it: 20
// projects of 500 tasks each, 50 ready to run and 450 uploaded and
// waiting to report, deadlines and receipt times with microseconds.
func bigState() *State {
	now := time.Unix(1_795_600_721, 123456789)
	s := &State{Now: now}
	for p := range 20 {
		url := fmt.Sprintf("http://127.0.0.1:38219/bq%02d/", p)
		s.Projects = append(s.Projects, ProjectInfo{})
		s.Projects[p].MasterURL = url
		s.Projects[p].ProjectName = fmt.Sprintf("Big Queue Project %02d", p)
		s.Apps = append(s.Apps, boinc.App{ProjectURL: url, Name: "sleep", UserFriendlyName: "Sleep"})
		s.AppVersions = append(s.AppVersions, boinc.AppVersion{ProjectURL: url, AppName: "sleep", VersionNum: 100, Platform: "x86_64-pc-linux-gnu", AvgNCPUs: 1, Flops: 4.5e9})
		for t := range 500 {
			wu := fmt.Sprintf("bq%02d_1795600721_%05d", p, t)
			s.Workunits = append(s.Workunits, boinc.Workunit{ProjectURL: url, Name: wu, AppName: "sleep", VersionNum: 100,
				RscFpopsEst: 3.6e12, RscFpopsBound: 3.6e13, RscMemoryBound: 1e8, RscDiskBound: 1e9,
				InputFiles: []boinc.FileRef{{FileName: wu + "_in", OpenName: "in"}}})
			r := ResultInfo{Result: boinc.Result{ProjectURL: url, Name: wu + "_0", WUName: wu, Platform: "x86_64-pc-linux-gnu", VersionNum: 100,
				ReportDeadline: now.Add(time.Duration(86400*7+t) * time.Second).Add(time.Duration(t) * time.Microsecond),
				ReceivedTime:   now.Add(-time.Duration(t) * time.Second), Phase: boinc.PhaseDownloaded},
				EstimatedRemaining: 3600.5}
			if t >= 50 {
				r.Phase, r.FinalCPUTime, r.FinalElapsedTime = boinc.PhaseUploaded, 3590.25, 3601.75
				r.CompletedTime = now.Add(-time.Duration(t) * time.Minute)
			}
			s.Results = append(s.Results, r)
		}
	}
	return s
}

// BenchmarkWriteState is the daemon's own part of a 10,000-task
// get_state and get_results: writing the reply (the snapshot and the
// socket are timed by the daemon's BenchmarkBigQueue).
func BenchmarkWriteState(b *testing.B) {
	s := bigState()
	for _, c := range []struct {
		name  string
		write func(*xw)
	}{
		{"get_state", func(w *xw) { writeState(w, s) }},
		{"get_results", func(w *xw) { writeResults(w, s, false) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			var w xw
			for b.Loop() {
				w.Reset()
				c.write(&w)
			}
			b.SetBytes(int64(w.Len()))
		})
	}
}
