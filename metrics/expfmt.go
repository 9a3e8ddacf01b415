package metrics

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// ContentType is the media type of the exposition Server writes: the
// Prometheus text format, version 0.0.4.
const ContentType = "text/plain; version=0.0.4; charset=utf-8"

// metricType is a family's TYPE. Only the two types boincd exports exist.
type metricType uint8

const (
	gauge metricType = iota
	counter
)

func (t metricType) String() string {
	if t == counter {
		return "counter"
	}
	return "gauge"
}

// desc describes one metric family: what client_golang's Desc and value
// type were together. Label values are passed in the order of labels;
// the exposition writes the pairs sorted by label name, as the
// client_golang registry does.
type desc struct {
	name   string
	help   string
	typ    metricType
	labels []string // label names in the order values are given
	order  []int    // indices into labels, sorted by label name
}

func newDesc(name, help string, typ metricType, labels ...string) *desc {
	order := make([]int, len(labels))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(i, j int) bool { return labels[order[i]] < labels[order[j]] })
	return &desc{name: name, help: help, typ: typ, labels: labels, order: order}
}

// sample is one series of a family: its label values in label-name order
// (desc.order applied) and its value.
type sample struct {
	values []string
	v      float64
}

type family struct {
	d       *desc
	samples []sample
}

// batch gathers the families of one scrape. It is used by one goroutine.
type batch struct {
	fams map[string]*family
	errs []error
}

// add records one sample of d. A wrong number of label values (a bug) or a
// second family with d's name but another description drops the sample
// and is reported by write, as the client_golang registry reported an
// invalid metric while serving the rest.
func (b *batch) add(d *desc, v float64, labelValues ...string) {
	if len(labelValues) != len(d.labels) {
		b.errs = append(b.errs, fmt.Errorf("metrics: %s: %d label values for %d labels", d.name, len(labelValues), len(d.labels)))
		return
	}
	if b.fams == nil {
		b.fams = make(map[string]*family)
	}
	f := b.fams[d.name]
	if f == nil {
		f = &family{d: d}
		b.fams[d.name] = f
	} else if f.d != d {
		b.errs = append(b.errs, fmt.Errorf("metrics: %s: two descriptions of one family", d.name))
		return
	}
	s := sample{v: v}
	if len(labelValues) > 0 {
		s.values = make([]string, len(labelValues))
		for i, j := range d.order {
			s.values[i] = validUTF8(labelValues[j])
		}
	}
	f.samples = append(f.samples, s)
}

// write appends the exposition of the batch to buf in the text format
// 0.0.4: families sorted by name, samples sorted by their label values in
// label-name order, as client_golang's registry sorts them. A series that
// repeats another's labels is left out and reported in the result.
func (b *batch) write(buf *bytes.Buffer) []error {
	errs := b.errs
	names := make([]string, 0, len(b.fams))
	for n := range b.fams {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		f := b.fams[n]
		d := f.d
		slices.SortStableFunc(f.samples, func(x, y sample) int { return slices.Compare(x.values, y.values) })
		buf.WriteString("# HELP ")
		buf.WriteString(d.name)
		buf.WriteByte(' ')
		writeEscaped(buf, d.help, helpEscaper)
		buf.WriteString("\n# TYPE ")
		buf.WriteString(d.name)
		buf.WriteByte(' ')
		buf.WriteString(d.typ.String())
		buf.WriteByte('\n')
		for i, s := range f.samples {
			if i > 0 && slices.Equal(s.values, f.samples[i-1].values) {
				errs = append(errs, fmt.Errorf("metrics: %s: duplicate series %q", d.name, s.values))
				continue
			}
			buf.WriteString(d.name)
			if len(s.values) > 0 {
				buf.WriteByte('{')
				for k, v := range s.values {
					if k > 0 {
						buf.WriteByte(',')
					}
					buf.WriteString(d.labels[d.order[k]])
					buf.WriteString(`="`)
					writeEscaped(buf, v, labelEscaper)
					buf.WriteByte('"')
				}
				buf.WriteByte('}')
			}
			buf.WriteByte(' ')
			writeFloat(buf, s.v)
			buf.WriteByte('\n')
		}
	}
	return errs
}

// The escapes of the text format (and of prometheus/common/expfmt): HELP
// text escapes backslash and newline; label values also the double quote.
var (
	helpEscaper  = strings.NewReplacer(`\`, `\\`, "\n", `\n`)
	labelEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`, `"`, `\"`)
)

// validUTF8 replaces invalid UTF-8 in s by U+FFFD: Prometheus' parser
// rejects a label value that is not UTF-8, and one bad string must not
// cost the whole scrape. add applies it before sorting, so that series
// which differ only in invalid bytes are caught as duplicates.
func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}

// writeEscaped writes s, made valid UTF-8, escaped by r.
func writeEscaped(buf *bytes.Buffer, s string, r *strings.Replacer) {
	r.WriteString(buf, validUTF8(s))
}

// writeFloat formats f as expfmt does: 1, 0, -1, NaN, +Inf, -Inf, and
// otherwise the shortest representation that parses back to f ('g').
func writeFloat(buf *bytes.Buffer, f float64) {
	switch {
	case f == 1:
		buf.WriteByte('1')
	case f == 0:
		buf.WriteByte('0')
	case f == -1:
		buf.WriteString("-1")
	case math.IsNaN(f):
		buf.WriteString("NaN")
	case math.IsInf(f, +1):
		buf.WriteString("+Inf")
	case math.IsInf(f, -1):
		buf.WriteString("-Inf")
	default:
		var num [32]byte
		buf.Write(strconv.AppendFloat(num[:0], f, 'g', -1, 64))
	}
}
