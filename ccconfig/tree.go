package ccconfig

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Problem is something wrong in a file, with where it is.
type Problem struct {
	File string
	Line int // 0 when it concerns the whole file
	Msg  string
}

func (p Problem) Error() string {
	if p.Line > 0 {
		return fmt.Sprintf("%s line %d: %s", p.File, p.Line, p.Msg)
	}
	return p.File + ": " + p.Msg
}

// node is an element with the line it starts on.
type node struct {
	name     string
	text     string
	line     int
	children []*node
}

// maxFileBytes bounds what is read of a configuration file: the largest
// real ones are a few kilobytes.
const maxFileBytes = 1 << 20

// parseTree reads data into a tree of elements. A syntax error is a
// problem; the elements read before it are kept, so that what comes
// before a typo still applies.
func parseTree(file string, data []byte) (*node, []Problem) {
	if len(data) > maxFileBytes {
		return nil, []Problem{{File: file, Msg: fmt.Sprintf("larger than %d bytes; ignored", maxFileBytes)}}
	}
	d := xml.NewDecoder(bytes.NewReader(data))
	d.Strict = false
	d.AutoClose = nil
	d.Entity = xml.HTMLEntity
	root := &node{}
	stack := []*node{root}
	var probs []Problem
	for {
		line, _ := d.InputPos()
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			var se *xml.SyntaxError
			if errors.As(err, &se) && se.Msg == "unexpected EOF" && len(stack) > 1 {
				open := stack[len(stack)-1]
				probs = append(probs, Problem{File: file, Line: open.line, Msg: fmt.Sprintf("<%s> is never closed", open.name)})
			} else if errors.As(err, &se) {
				probs = append(probs, Problem{File: file, Line: se.Line, Msg: "XML syntax error: " + se.Msg + "; the rest of the file is ignored"})
			} else {
				probs = append(probs, Problem{File: file, Line: line, Msg: err.Error()})
			}
			break
		}
		top := stack[len(stack)-1]
		switch t := tok.(type) {
		case xml.StartElement:
			n := &node{name: t.Name.Local, line: line}
			top.children = append(top.children, n)
			stack = append(stack, n)
		case xml.EndElement:
			if len(stack) > 1 {
				stack = stack[:len(stack)-1]
			}
		case xml.CharData:
			top.text += string(t)
		}
	}
	if len(stack) > 1 && len(probs) == 0 {
		open := stack[len(stack)-1]
		probs = append(probs, Problem{File: file, Line: open.line, Msg: fmt.Sprintf("<%s> is never closed", open.name)})
	}
	return root, probs
}

// value readers: each reports a problem naming the element and line.

func (n *node) str() string { return strings.TrimSpace(n.text) }

// flag is XML_PARSER::parse_bool: <x/>, <x>1</x>, <x>0</x>.
func (n *node) flag(file string, probs *[]Problem) bool {
	s := n.str()
	if s == "" {
		return true
	}
	v, err := strconv.Atoi(s)
	if err != nil {
		*probs = append(*probs, Problem{File: file, Line: n.line, Msg: fmt.Sprintf("<%s>%s</%s>: not 0 or 1", n.name, s, n.name)})
		return false
	}
	return v != 0
}

func (n *node) int(file string, probs *[]Problem) (int, bool) {
	v, err := strconv.Atoi(n.str())
	if err != nil {
		*probs = append(*probs, Problem{File: file, Line: n.line, Msg: fmt.Sprintf("<%s>%s</%s>: not a whole number", n.name, n.str(), n.name)})
		return 0, false
	}
	return v, true
}

func (n *node) float(file string, probs *[]Problem) (float64, bool) {
	v, err := strconv.ParseFloat(n.str(), 64)
	if err != nil || v != v {
		*probs = append(*probs, Problem{File: file, Line: n.line, Msg: fmt.Sprintf("<%s>%s</%s>: not a number", n.name, n.str(), n.name)})
		return 0, false
	}
	return v, true
}

// raw writes n back as XML (for elements passed on whole).
func (n *node) raw() string {
	var b strings.Builder
	var walk func(*node)
	walk = func(n *node) {
		b.WriteString("<" + n.name + ">")
		xml.EscapeText(&b, []byte(strings.TrimSpace(n.text)))
		for _, c := range n.children {
			walk(c)
		}
		b.WriteString("</" + n.name + ">")
	}
	walk(n)
	return b.String()
}
