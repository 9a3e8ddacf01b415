package guirpc

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strings"
)

// request is one parsed GUI RPC request: the op element and its direct
// children.
type request struct {
	op     string
	fields map[string]string // child element → its text, trimmed
	raw    []byte            // the whole message, for ops that take raw XML
	// notices is the connection's get_notices memory (notices.go); nil
	// outside a connection.
	notices *noticeConn
	client  string // the <name> the connection gave in exchange_versions
}

func (r *request) has(name string) bool { _, ok := r.fields[name]; return ok }

var errNoOp = errors.New("missing request")

// parseRequest reads `<boinc_gui_rpc_request><OP>…</OP></boinc_gui_rpc_request>`.
// Like the C++ server it is lenient: the wrapper may be missing, unknown
// entities pass through, and anything after the op element is ignored.
func parseRequest(msg []byte) (*request, error) {
	d := xml.NewDecoder(bytes.NewReader(msg))
	d.Strict = false
	d.AutoClose = nil
	req := &request{fields: map[string]string{}, raw: msg}
	depth := 0 // below the op element
	var child string
	var text strings.Builder
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			if req.op != "" && depth == 0 {
				// The op element is complete; trailing garbage is ignored.
				return req, nil
			}
			return nil, fmt.Errorf("malformed request at byte %d: %w", d.InputOffset(), err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			name := t.Name.Local
			if req.op == "" {
				if name == "boinc_gui_rpc_request" {
					continue
				}
				req.op = name
				depth = 1
				continue
			}
			if depth == 0 {
				// A second op in one message: the first one wins.
				return req, nil
			}
			depth++
			if depth == 2 {
				child = name
				text.Reset()
			}
		case xml.EndElement:
			if req.op == "" {
				continue
			}
			if depth == 0 {
				continue
			}
			depth--
			switch depth {
			case 1:
				if _, seen := req.fields[child]; !seen {
					req.fields[child] = strings.TrimSpace(text.String())
				}
			case 0:
				return req, nil
			}
		case xml.CharData:
			if depth == 2 {
				text.Write(t)
			}
		}
	}
	if req.op == "" {
		return nil, errNoOp
	}
	if depth != 0 {
		return nil, fmt.Errorf("malformed request: <%s> is not closed", req.op)
	}
	return req, nil
}

// innerXML returns what lies between <op> and </op> in the raw message,
// trimmed; ok is false when the op has no separate closing tag.
func (r *request) innerXML() (string, bool) {
	open := []byte("<" + r.op + ">")
	i := bytes.Index(r.raw, open)
	if i < 0 {
		return "", false
	}
	rest := r.raw[i+len(open):]
	j := bytes.Index(rest, []byte("</"+r.op))
	if j < 0 {
		return "", false
	}
	return strings.TrimSpace(string(rest[:j])), true
}
