package importer

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Size limits for the files read from the BOINC directory: far above what
// a real client writes (a client_state.xml with thousands of tasks is a
// few MB), low enough that a hostile file cannot exhaust memory.
const (
	maxStateFileBytes   = 256 << 20
	maxAccountFileBytes = 4 << 20
	maxXMLDepth         = 64
)

// ParseError is a problem in one of the BOINC client's files: the file,
// the line, and the element it concerns.
type ParseError struct {
	File    string
	Line    int
	Element string
	Err     error
}

func (e *ParseError) Error() string {
	loc := e.File
	if e.Line > 0 {
		loc += ":" + strconv.Itoa(e.Line)
	}
	if e.Element != "" {
		return fmt.Sprintf("%s: %s: %v", loc, e.Element, e.Err)
	}
	return fmt.Sprintf("%s: %v", loc, e.Err)
}

func (e *ParseError) Unwrap() error { return e.Err }

// node is one element of a parsed file, with the line its start tag is on
// (for error messages) and its raw inner bytes (for project preferences,
// which are kept verbatim as the daemon keeps them).
type node struct {
	name string
	line int
	text string
	raw  string
	kids []*node
	// path names the element for messages, e.g. "<result> refwu_1_0".
	path string
}

// readXMLFile reads and parses a whole file into a tree rooted at the
// document element.
func readXMLFile(path string, limit int64) (*node, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if int64(len(data)) > limit {
		return nil, &ParseError{File: path, Err: fmt.Errorf("file is larger than %d MiB; not a BOINC client file", limit>>20)}
	}
	return parseXML(path, data)
}

// parseXML builds the tree. Bytes the Go decoder refuses but BOINC writes
// unchecked (invalid UTF-8 or control bytes in a task's stderr_out) are
// replaced first; newlines are kept, so line numbers stay right.
func parseXML(file string, data []byte) (*node, error) {
	data = sanitizeXML(data)
	d := xml.NewDecoder(bytes.NewReader(data))
	d.Entity = xml.HTMLEntity
	var stack []*node
	var root *node
	textBuf := map[*node]*strings.Builder{}
	innerStart := map[*node]int64{}
	for {
		before := d.InputOffset()
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			line, _ := d.InputPos()
			elem := ""
			if len(stack) > 0 {
				elem = "<" + stack[len(stack)-1].name + ">"
			}
			return nil, &ParseError{File: file, Line: line, Element: elem, Err: fmt.Errorf("malformed XML: %w", unwrapSyntax(err))}
		}
		switch t := tok.(type) {
		case xml.StartElement:
			line, _ := d.InputPos()
			n := &node{name: t.Name.Local, line: line}
			if len(stack) == 0 {
				if root != nil {
					return nil, &ParseError{File: file, Line: line, Element: "<" + n.name + ">", Err: errors.New("second document element")}
				}
				root = n
			} else {
				p := stack[len(stack)-1]
				p.kids = append(p.kids, n)
			}
			if len(stack) >= maxXMLDepth {
				return nil, &ParseError{File: file, Line: line, Element: "<" + n.name + ">", Err: fmt.Errorf("elements nested deeper than %d", maxXMLDepth)}
			}
			stack = append(stack, n)
			innerStart[n] = d.InputOffset()
		case xml.EndElement:
			n := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if b := textBuf[n]; b != nil {
				n.text = b.String()
				delete(textBuf, n)
			}
			if s := innerStart[n]; s <= before {
				n.raw = string(data[s:before])
			}
			delete(innerStart, n)
		case xml.CharData:
			if len(stack) > 0 {
				n := stack[len(stack)-1]
				b := textBuf[n]
				if b == nil {
					b = &strings.Builder{}
					textBuf[n] = b
				}
				b.Write(t)
			}
		}
	}
	if root == nil {
		return nil, &ParseError{File: file, Err: errors.New("no XML document element")}
	}
	return root, nil
}

func unwrapSyntax(err error) error {
	var se *xml.SyntaxError
	if errors.As(err, &se) {
		return errors.New(se.Msg)
	}
	return err
}

// sanitizeXML replaces invalid UTF-8 and control bytes (other than tab,
// CR and LF) with U+FFFD.
func sanitizeXML(data []byte) []byte {
	clean := utf8.Valid(data)
	if clean {
		for _, c := range data {
			if c < 0x20 && c != '\t' && c != '\n' && c != '\r' {
				clean = false
				break
			}
		}
	}
	if clean {
		return data
	}
	out := make([]byte, 0, len(data))
	for len(data) > 0 {
		r, size := utf8.DecodeRune(data)
		switch {
		case r == utf8.RuneError && size <= 1:
			out = utf8.AppendRune(out, utf8.RuneError)
		case r < 0x20 && r != '\t' && r != '\n' && r != '\r':
			out = utf8.AppendRune(out, utf8.RuneError)
		default:
			out = append(out, data[:size]...)
		}
		data = data[size:]
	}
	return out
}

// fields reads the children of one element, keeping the first error with
// the file, line and element it concerns, so the interpreting code can
// read many fields and check once.
type fields struct {
	file string
	n    *node
	err  error
}

func (f *fields) fail(c *node, format string, args ...any) {
	if f.err != nil {
		return
	}
	line := f.n.line
	elem := f.n.path
	if c != nil {
		line = c.line
		elem += " <" + c.name + ">"
	}
	f.err = &ParseError{File: f.file, Line: line, Element: strings.TrimSpace(elem), Err: fmt.Errorf(format, args...)}
}

func (f *fields) child(name string) *node {
	for _, c := range f.n.kids {
		if c.name == name {
			return c
		}
	}
	return nil
}

func (f *fields) all(name string) []*node {
	var out []*node
	for _, c := range f.n.kids {
		if c.name == name {
			out = append(out, c)
		}
	}
	return out
}

func (f *fields) str(name string) string {
	if c := f.child(name); c != nil {
		return strings.TrimSpace(c.text)
	}
	return ""
}

func (f *fields) strs(name string) []string {
	var out []string
	for _, c := range f.all(name) {
		if s := strings.TrimSpace(c.text); s != "" {
			out = append(out, s)
		}
	}
	return out
}

func (f *fields) float(name string) float64 {
	c := f.child(name)
	if c == nil {
		return 0
	}
	s := strings.TrimSpace(c.text)
	if s == "" {
		return 0
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		f.fail(c, "invalid number %q", s)
		return 0
	}
	return v
}

func (f *fields) int64(name string) int64 {
	c := f.child(name)
	if c == nil {
		return 0
	}
	s := strings.TrimSpace(c.text)
	if s == "" {
		return 0
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n
	}
	// BOINC prints some integers through a double format ("100.000000").
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || v != math.Trunc(v) || math.Abs(v) > 1<<53 {
		f.fail(c, "invalid integer %q", s)
		return 0
	}
	return int64(v)
}

func (f *fields) int(name string) int {
	n := f.int64(name)
	if n > math.MaxInt32 || n < math.MinInt32 {
		f.fail(f.child(name), "integer %d out of range", n)
		return 0
	}
	return int(n)
}

// bool reads a BOINC flag: <flag/> is true, otherwise a non-zero number.
func (f *fields) bool(name string) bool {
	c := f.child(name)
	if c == nil {
		return false
	}
	s := strings.TrimSpace(c.text)
	if s == "" {
		return true
	}
	if v, err := strconv.ParseFloat(s, 64); err == nil {
		return v != 0
	}
	return s == "true"
}

// time reads Unix seconds; 0 or absent is the zero time (as the daemon's
// reply parser converts).
func (f *fields) time(name string) time.Time {
	v := f.float(name)
	if v <= 0 {
		return time.Time{}
	}
	if v > 1<<40 {
		v = 1 << 40
	}
	sec, frac := math.Modf(v)
	return time.Unix(int64(sec), int64(frac*1e9)).UTC()
}
