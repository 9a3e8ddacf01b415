package importer

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/boincd/boincd/boinc"
)

// The C++ client's statistics files: statistics_<project>.xml, one per
// project (PROJECT::write_statistics_file), and daily_xfer_history.xml.
// They are history for people, not state work depends on: a file that
// cannot be read is skipped with a warning instead of failing the import.
const (
	statsFilePrefix   = "statistics_"
	dailyXferFileName = "daily_xfer_history.xml"
	maxStatsFileBytes = 4 << 20
	// statsDaysKept is save_stats_days: a project keeps this many days
	// before its newest entry.
	statsDaysKept = 30
	// xferDaysKept bounds the imported transfer history as the daemon
	// bounds its own.
	xferDaysKept = 365
)

// readStatistics reads every statistics_*.xml of dir, keyed by canonical
// master URL, each list sorted by day and bounded as the client keeps it.
func readStatistics(dir string, log *slog.Logger) map[string][]boinc.DailyStats {
	paths, err := filepath.Glob(filepath.Join(dir, statsFilePrefix+"*.xml"))
	if err != nil {
		return nil
	}
	out := map[string][]boinc.DailyStats{}
	for _, path := range paths {
		url, list, err := parseStatisticsFile(path)
		if err != nil {
			log.Warn("project statistics not imported", slog.String("file", path), slog.Any("err", err))
			continue
		}
		out[url] = append(out[url], list...)
	}
	for url, list := range out {
		slices.SortStableFunc(list, func(a, b boinc.DailyStats) int { return a.Day.Compare(b.Day) })
		// One entry per day, the last written winning, as the client's
		// own update replaces today's entry.
		dedup := list[:0]
		for _, s := range list {
			if n := len(dedup); n > 0 && dedup[n-1].Day.Equal(s.Day) {
				dedup[n-1] = s
			} else {
				dedup = append(dedup, s)
			}
		}
		list = dedup
		if n := len(list); n > 0 {
			cutoff := list[n-1].Day.Add(-statsDaysKept * 24 * time.Hour)
			i := 0
			for i < n && list[i].Day.Before(cutoff) {
				i++
			}
			list = list[i:]
		}
		out[url] = list
	}
	return out
}

// parseStatisticsFile reads one <project_statistics> file. Unknown
// elements are skipped, as PROJECT::parse_statistics skips them; an entry
// without a day (which the client would file under 1970) is dropped.
func parseStatisticsFile(path string) (string, []boinc.DailyStats, error) {
	root, err := readXMLFile(path, maxStatsFileBytes)
	if err != nil {
		return "", nil, err
	}
	if root.name != "project_statistics" {
		return "", nil, &ParseError{File: path, Line: root.line, Element: "<" + root.name + ">", Err: errors.New("not a <project_statistics> file")}
	}
	root.path = "<project_statistics>"
	f := &fields{file: path, n: root}
	raw := f.str("master_url")
	if raw == "" {
		f.fail(nil, "no <master_url>")
		return "", nil, f.err
	}
	url, err := boinc.CanonicalMasterURL(raw)
	if err != nil {
		f.fail(f.child("master_url"), "%v", err)
		return "", nil, f.err
	}
	var list []boinc.DailyStats
	for _, c := range f.all("daily_statistics") {
		c.path = root.path + " <daily_statistics>"
		cf := &fields{file: path, n: c}
		day := cf.time("day")
		s := boinc.DailyStats{
			Day:              day,
			UserTotalCredit:  cf.float("user_total_credit"),
			UserExpavgCredit: cf.float("user_expavg_credit"),
			HostTotalCredit:  cf.float("host_total_credit"),
			HostExpavgCredit: cf.float("host_expavg_credit"),
		}
		if cf.err != nil {
			return "", nil, cf.err
		}
		if day.IsZero() {
			continue
		}
		s.Day = time.Unix(day.Unix(), 0)
		list = append(list, s)
	}
	return url, list, nil
}

// readDailyXfers reads daily_xfer_history.xml (DAILY_XFER_HISTORY): nil
// when there is none or it cannot be read.
func readDailyXfers(dir string, log *slog.Logger) []boinc.DailyXfer {
	path := filepath.Join(dir, dailyXferFileName)
	list, err := parseDailyXfers(path)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			log.Warn("daily transfer history not imported", slog.String("file", path), slog.Any("err", err))
		}
		return nil
	}
	return list
}

func parseDailyXfers(path string) ([]boinc.DailyXfer, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, err
	}
	root, err := readXMLFile(path, maxStatsFileBytes)
	if err != nil {
		return nil, err
	}
	if root.name != "daily_xfers" {
		return nil, &ParseError{File: path, Line: root.line, Element: "<" + root.name + ">", Err: errors.New("not a <daily_xfers> file")}
	}
	root.path = "<daily_xfers>"
	f := &fields{file: path, n: root}
	byDay := map[int]*boinc.DailyXfer{}
	for _, c := range f.all("dx") {
		c.path = fmt.Sprintf("%s <dx> (line %d)", root.path, c.line)
		cf := &fields{file: path, n: c}
		x := boinc.DailyXfer{When: cf.int("when"), Up: cf.float("up"), Down: cf.float("down")}
		if cf.err != nil {
			return nil, cf.err
		}
		if x.When <= 0 || x.Up < 0 || x.Down < 0 {
			continue
		}
		if e := byDay[x.When]; e != nil {
			e.Up += x.Up
			e.Down += x.Down
		} else {
			byDay[x.When] = &x
		}
	}
	list := make([]boinc.DailyXfer, 0, len(byDay))
	for _, x := range byDay {
		list = append(list, *x)
	}
	slices.SortFunc(list, func(a, b boinc.DailyXfer) int { return a.When - b.When })
	if n := len(list); n > 0 {
		last := list[n-1].When
		i := 0
		for i < n && list[i].When <= last-xferDaysKept {
			i++
		}
		list = list[i:]
	}
	return list, nil
}
