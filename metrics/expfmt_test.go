package metrics

import (
	"bytes"
	"context"
	"math"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// The package writes the text format itself; these helpers check what it
// writes with Prometheus' own parser, linter and writer, which are test
// dependencies only.

// scrape returns c's exposition of one scrape.
func scrape(t *testing.T, c *Collector) string {
	t.Helper()
	var b strings.Builder
	if err := c.WriteText(t.Context(), &b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// fullScrape returns what Server serves for c: its metrics and the Go and
// process series.
func fullScrape(t *testing.T, c *Collector) string {
	t.Helper()
	var b batch
	c.collect(t.Context(), &b)
	collectGo(&b)
	collectProcess(&b)
	var buf bytes.Buffer
	if errs := b.write(&buf); len(errs) > 0 {
		t.Errorf("write: %v", errs)
	}
	return buf.String()
}

// parse parses an exposition with Prometheus' text parser (legacy name
// validation, the strictest) and checks what client_golang's registry
// guaranteed: families sorted by name, label pairs sorted by name, series
// sorted by label values, no duplicate series; and that expfmt writes the
// parsed families back byte for byte as we wrote them, so our escaping
// and number formatting are expfmt's.
func parse(t *testing.T, text string) []*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.LegacyValidation)
	byName, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatalf("Prometheus' parser: %v\nin:\n%s", err, text)
	}
	mfs := make([]*dto.MetricFamily, 0, len(byName))
	for _, mf := range byName {
		mfs = append(mfs, mf)
	}
	sort.Slice(mfs, func(i, j int) bool { return mfs[i].GetName() < mfs[j].GetName() })
	var again strings.Builder
	for _, mf := range mfs {
		var prev []string
		for i, m := range mf.GetMetric() {
			var names, values []string
			for _, l := range m.GetLabel() {
				names = append(names, l.GetName())
				values = append(values, l.GetValue())
			}
			if !slices.IsSorted(names) {
				t.Errorf("%s: label names not sorted: %q", mf.GetName(), names)
			}
			if i > 0 && slices.Compare(prev, values) >= 0 {
				t.Errorf("%s: series %q after %q: not sorted or duplicate", mf.GetName(), values, prev)
			}
			prev = values
		}
		if _, err := expfmt.MetricFamilyToText(&again, mf); err != nil {
			t.Fatal(err)
		}
	}
	if again.String() != text {
		t.Errorf("expfmt writes the parsed exposition differently:\n%s\nwe wrote:\n%s", again.String(), text)
	}
	return mfs
}

// render parses text and writes back with expfmt only the families
// named (all when none are), as testutil.CollectAndCompare compared.
func render(t *testing.T, text string, names ...string) string {
	t.Helper()
	var b strings.Builder
	for _, mf := range parse(t, text) {
		if len(names) > 0 && !slices.Contains(names, mf.GetName()) {
			continue
		}
		if _, err := expfmt.MetricFamilyToText(&b, mf); err != nil {
			t.Fatal(err)
		}
	}
	return b.String()
}

func countSeries(mfs []*dto.MetricFamily, names ...string) int {
	n := 0
	for _, mf := range mfs {
		if len(names) == 0 || slices.Contains(names, mf.GetName()) {
			n += len(mf.GetMetric())
		}
	}
	return n
}

func lint(text string) ([]promlint.Problem, error) {
	return promlint.New(strings.NewReader(text)).Lint()
}

func TestWriteFloat(t *testing.T) {
	tests := []struct {
		in   float64
		want string
	}{
		{0, "0"},
		{math.Copysign(0, -1), "0"},
		{1, "1"},
		{-1, "-1"},
		{0.1, "0.1"},
		{1.25, "1.25"},
		{-120, "-120"},
		{3600, "3600"},
		{1.7e9, "1.7e+09"},
		{123456789, "1.23456789e+08"},
		{16e9, "1.6e+10"},
		{1e21, "1e+21"},
		{1e-7, "1e-07"},
		{5e-324, "5e-324"},
		{math.MaxFloat64, "1.7976931348623157e+308"},
		{float64(^uint64(0)), "1.8446744073709552e+19"},
		{math.Inf(1), "+Inf"},
		{math.Inf(-1), "-Inf"},
		{math.NaN(), "NaN"},
	}
	for _, tc := range tests {
		var buf bytes.Buffer
		writeFloat(&buf, tc.in)
		if buf.String() != tc.want {
			t.Errorf("writeFloat(%v) = %q, want %q", tc.in, buf.String(), tc.want)
		}
	}
}

// TestExpositionOrder: families by name, series by label values in
// label-name order (not in the order the labels were declared or the
// series added), as client_golang's registry sorts.
func TestExpositionOrder(t *testing.T) {
	z := newDesc("z_metric", "Last.", counter)
	a := newDesc("a_metric", "First; labels declared out of order.", gauge, "zeta", "alpha")
	var b batch
	b.add(z, 3)
	b.add(a, 1, "2", "b")
	b.add(a, 2, "1", "b")
	b.add(a, 3, "9", "a")
	b.add(a, 4, "1", "b") // duplicate of the second: left out, reported
	b.add(a, 5, "too few")
	var buf bytes.Buffer
	errs := b.write(&buf)
	want := `# HELP a_metric First; labels declared out of order.
# TYPE a_metric gauge
a_metric{alpha="a",zeta="9"} 3
a_metric{alpha="b",zeta="1"} 2
a_metric{alpha="b",zeta="2"} 1
# HELP z_metric Last.
# TYPE z_metric counter
z_metric 3
`
	if buf.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", buf.String(), want)
	}
	if len(errs) != 2 {
		t.Errorf("errors %v, want two (label count, duplicate)", errs)
	}
	parse(t, buf.String())
}

// hostile label values and how the text format must carry them.
var hostileValues = []struct{ in, escaped, parsed string }{
	{`plain`, `plain`, `plain`},
	{`say "hi"`, `say \"hi\"`, `say "hi"`},
	{`C:\boinc\`, `C:\\boinc\\`, `C:\boinc\`},
	{"two\nlines", `two\nlines`, "two\nlines"},
	{`literal \n`, `literal \\n`, `literal \n`},
	{`\"`, `\\\"`, `\"`},
	{"cr\rtab\t", "cr\rtab\t", "cr\rtab\t"},
	{"} 1\nfake_metric 2", `} 1\nfake_metric 2`, "} 1\nfake_metric 2"},
	{"bad\xff\xfeutf8", "bad\uFFFDutf8", "bad\uFFFDutf8"},
	{"\xc3", "\uFFFD", "\uFFFD"},
	{"é日本", "é日本", "é日本"},
	{"", "", ""},
}

func TestLabelEscaping(t *testing.T) {
	d := newDesc("test_metric", "Help with \\ backslash,\nnewline and \"quotes\".", gauge, "v")
	for _, tc := range hostileValues {
		var b batch
		b.add(d, 1, tc.in)
		var buf bytes.Buffer
		b.write(&buf)
		want := "# HELP test_metric Help with \\\\ backslash,\\nnewline and \"quotes\".\n# TYPE test_metric gauge\n" +
			`test_metric{v="` + tc.escaped + `"} 1` + "\n"
		if buf.String() != want {
			t.Errorf("value %q:\n%s\nwant:\n%s", tc.in, buf.String(), want)
			continue
		}
		mfs := parse(t, buf.String())
		if got := mfs[0].GetMetric()[0].GetLabel()[0].GetValue(); got != tc.parsed {
			t.Errorf("value %q parses back as %q, want %q", tc.in, got, tc.parsed)
		}
		if got := mfs[0].GetHelp(); got != d.help {
			t.Errorf("help parses back as %q, want %q", got, d.help)
		}
	}
}

// FuzzLabelValue: whatever a project server or a GPU driver puts in a
// string, the exposition parses, with the value intact (invalid UTF-8
// replaced) and no extra series.
func FuzzLabelValue(f *testing.F) {
	for _, tc := range hostileValues {
		f.Add(tc.in, tc.in+"x")
	}
	d := newDesc("fuzz_metric", "Fuzzed.", gauge, "b", "a")
	f.Fuzz(func(t *testing.T, v1, v2 string) {
		var b batch
		b.add(d, 1, v1, v2)
		b.add(d, 2, label(v1), ProjectLabel(v2)+"\x00")
		var buf bytes.Buffer
		b.write(&buf)
		mfs := parse(t, buf.String())
		if len(mfs) != 1 || mfs[0].GetName() != "fuzz_metric" {
			t.Fatalf("families %v from:\n%s", mfs, buf.String())
		}
		ms := mfs[0].GetMetric()
		type key struct{ a, b string }
		want := map[key]float64{}
		for _, s := range [][3]any{{v1, v2, 1.0}, {label(v1), ProjectLabel(v2) + "\x00", 2.0}} {
			k := key{strings.ToValidUTF8(s[1].(string), "\uFFFD"), strings.ToValidUTF8(s[0].(string), "\uFFFD")}
			if _, dup := want[k]; !dup {
				want[k] = s[2].(float64)
			}
		}
		if len(ms) != len(want) {
			t.Fatalf("%d series, want %d:\n%s", len(ms), len(want), buf.String())
		}
		for _, m := range ms {
			l := m.GetLabel()
			if len(l) != 2 || l[0].GetName() != "a" || l[1].GetName() != "b" {
				t.Fatalf("labels %v", l)
			}
			for _, p := range l {
				if !utf8.ValidString(p.GetValue()) {
					t.Fatalf("invalid UTF-8 %q", p.GetValue())
				}
			}
			if v, ok := want[key{l[0].GetValue(), l[1].GetValue()}]; !ok || v != m.GetGauge().GetValue() {
				t.Fatalf("series %v not written:\n%s", l, buf.String())
			}
		}
	})
}

// TestRuntimeAndProcessSeries: the Go series are there with plausible
// values, and on Linux the process series too.
func TestRuntimeAndProcessSeries(t *testing.T) {
	text := fullScrape(t, NewCollector(fixed(&Snapshot{}), time.Second, nil))
	got := map[string]*dto.MetricFamily{}
	for _, mf := range parse(t, text) {
		got[mf.GetName()] = mf
	}
	val := func(name string) float64 {
		t.Helper()
		mf := got[name]
		if mf == nil || len(mf.GetMetric()) != 1 {
			t.Fatalf("%s missing or not one series in:\n%s", name, text)
		}
		if m := mf.GetMetric()[0]; m.Counter != nil {
			return m.GetCounter().GetValue()
		}
		return mf.GetMetric()[0].GetGauge().GetValue()
	}
	for _, name := range []string{"go_goroutines", "go_threads", "go_memstats_alloc_bytes", "go_memstats_heap_inuse_bytes", "go_memstats_sys_bytes"} {
		if v := val(name); v < 1 {
			t.Errorf("%s = %v", name, v)
		}
	}
	if a, in, sys := val("go_memstats_alloc_bytes"), val("go_memstats_heap_inuse_bytes"), val("go_memstats_sys_bytes"); a > in || in > sys {
		t.Errorf("alloc %v, heap in use %v, sys %v: want alloc <= in use <= sys", a, in, sys)
	}
	if l := got["go_info"].GetMetric()[0].GetLabel(); len(l) != 1 || l[0].GetName() != "version" || !strings.HasPrefix(l[0].GetValue(), "go") {
		t.Errorf("go_info labels %v", l)
	}
	if !hasProcessSeries {
		for name := range got {
			if strings.HasPrefix(name, "process_") {
				t.Errorf("%s exported on a system without /proc", name)
			}
		}
		return
	}
	if v := val("process_resident_memory_bytes"); v < 1<<20 || v > val("process_virtual_memory_bytes") {
		t.Errorf("process_resident_memory_bytes = %v", v)
	}
	if v := val("process_cpu_seconds_total"); v <= 0 || got["process_cpu_seconds_total"].GetType() != dto.MetricType_COUNTER {
		t.Errorf("process_cpu_seconds_total = %v (%v)", v, got["process_cpu_seconds_total"].GetType())
	}
	start := val("process_start_time_seconds")
	if now := float64(time.Now().Unix()); start > now+1 || start < now-24*3600 {
		t.Errorf("process_start_time_seconds = %v, now %v", start, now)
	}
	if o, m := val("process_open_fds"), val("process_max_fds"); o < 3 || o > m {
		t.Errorf("process_open_fds %v, process_max_fds %v", o, m)
	}
}

func TestScrapeBoundedByContext(t *testing.T) {
	c := NewCollector(SourceFunc(func(ctx context.Context) (*Snapshot, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}), time.Hour, nil)
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	var b strings.Builder
	if err := c.WriteText(ctx, &b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "boincd_scrape_error 1") {
		t.Fatalf("got:\n%s", b.String())
	}
}
