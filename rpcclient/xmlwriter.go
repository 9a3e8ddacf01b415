package rpcclient

import (
	"bufio"
	"io"
	"math"
	"strconv"
)

// xw writes BOINC-style XML: printf-like lines, doubles as %f. It keeps the
// first write error and ignores later writes, so callers check once.
type xw struct {
	w   *bufio.Writer
	err error
}

func (x *xw) raw(s string) {
	if x.err != nil {
		return
	}
	_, x.err = x.w.WriteString(s)
}

func (x *xw) bytes(b []byte) {
	if x.err != nil {
		return
	}
	_, x.err = x.w.Write(b)
}

// esc writes s with &, < and > escaped, as BOINC's xml_escape does for the
// characters that would break the element structure.
func (x *xw) esc(s string) {
	start := 0
	for i := 0; i < len(s); i++ {
		var rep string
		switch s[i] {
		case '&':
			rep = "&amp;"
		case '<':
			rep = "&lt;"
		case '>':
			rep = "&gt;"
		default:
			continue
		}
		x.raw(s[start:i])
		x.raw(rep)
		start = i + 1
	}
	x.raw(s[start:])
}

// fmtF appends f the way C's "%f" prints it. Non-finite values would make
// the server's parser choke, so they go out as 0.
func fmtF(b []byte, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		f = 0
	}
	return strconv.AppendFloat(b, f, 'f', 6, 64)
}

// fmt0 appends f as C's "%.0f".
func fmt0(b []byte, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		f = 0
	}
	return strconv.AppendFloat(b, f, 'f', 0, 64)
}

func (x *xw) f(f float64) {
	if x.err != nil {
		return
	}
	x.bytes(fmtF(x.w.AvailableBuffer(), f))
}

func (x *xw) f0(f float64) {
	if x.err != nil {
		return
	}
	x.bytes(fmt0(x.w.AvailableBuffer(), f))
}

func (x *xw) i(n int64) {
	if x.err != nil {
		return
	}
	x.bytes(strconv.AppendInt(x.w.AvailableBuffer(), n, 10))
}

// Element helpers: open is the indented start tag, close the end tag with
// its newline, e.g. x.elemF("    <rrs_fraction>", v, "</rrs_fraction>\n").
func (x *xw) elemF(open string, v float64, close string) {
	x.raw(open)
	x.f(v)
	x.raw(close)
}

func (x *xw) elemF0(open string, v float64, close string) {
	x.raw(open)
	x.f0(v)
	x.raw(close)
}

func (x *xw) elemI(open string, v int64, close string) {
	x.raw(open)
	x.i(v)
	x.raw(close)
}

func (x *xw) elemS(open, v, close string) {
	x.raw(open)
	x.esc(v)
	x.raw(close)
}

func (x *xw) elemB(open string, v bool, close string) {
	x.raw(open)
	if v {
		x.raw("1")
	} else {
		x.raw("0")
	}
	x.raw(close)
}

// countWriter counts what reaches the underlying writer, for WriteTo's
// return value.
type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
