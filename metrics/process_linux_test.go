package metrics

import "testing"

const hasProcessSeries = true

func TestParseProcStat(t *testing.T) {
	// A command name with spaces and parentheses, as a process may set.
	line := "4242 (boincd (x) 1) S 1 4242 4242 0 -1 4194560 1234 0 0 0 250 75 0 0 20 0 9 0 123456 1300000000 4000 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n"
	st, err := parseProcStat([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	want := procStat{utime: 250, stime: 75, starttime: 123456, vsize: 1300000000, rss: 4000}
	if st != want {
		t.Errorf("parseProcStat = %+v, want %+v", st, want)
	}
	for _, bad := range []string{"", "4242 boincd S 1", "4242 (boincd) S 1 2 3", "4242 (boincd) S 1 4242 4242 0 -1 4194560 1234 0 0 0 x 75 0 0 20 0 9 0 123456 1300000000 4000"} {
		if _, err := parseProcStat([]byte(bad)); err == nil {
			t.Errorf("parseProcStat(%q) succeeded", bad)
		}
	}
}
