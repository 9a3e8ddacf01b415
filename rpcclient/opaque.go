package rpcclient

import (
	"bytes"
	"strconv"
	"strings"

	"github.com/boincd/boincd/boinc"
)

// Elements whose content the C++ client copies raw up to the first end tag
// (XML_PARSER::element_contents, copy_element_contents) instead of parsing
// it. Real servers fill them with unchecked text: the scheduler writes
// <message> bodies unescaped, and pastes gui_urls.xml after substituting
// the user's and team's names into it as they are. A user called "a<b" or a
// message with a lone "<br>" must not cost the volunteer the whole reply,
// so their content is turned into plain text before the XML is read.
var opaqueElements = [][]byte{[]byte("message"), []byte("gui_urls"), []byte("trickle_down")}

// maxOpaqueBody bounds what escapeOpaque rewrites: real bodies are a few
// hundred bytes, and escaping may grow them up to five times.
const maxOpaqueBody = 64 << 10

// escapeOpaque returns src with the markup characters inside every opaque element
// escaped, so the body reads back as the text it was written as; src itself
// when nothing needs it. Bodies without '<' are left alone (their entities
// decode as usual), as are unterminated elements, which the parser then
// reports.
func escapeOpaque(src []byte) []byte {
	var out []byte
	copied := 0
	for pos := 0; pos < len(src); {
		lt := bytes.IndexByte(src[pos:], '<')
		if lt < 0 {
			break
		}
		i := pos + lt
		pos = i + 1
		name := opaqueAt(src, i)
		if name == nil {
			continue
		}
		gt := bytes.IndexByte(src[i:], '>')
		if gt < 0 {
			break
		}
		bodyStart := i + gt + 1
		if src[bodyStart-2] == '/' {
			pos = bodyStart
			continue
		}
		endTag := append(append([]byte("</"), name...), '>')
		end := bytes.Index(src[bodyStart:], endTag)
		if end < 0 {
			break
		}
		body := src[bodyStart : bodyStart+end]
		pos = bodyStart + end + len(endTag)
		if len(body) > maxOpaqueBody || bytes.IndexByte(body, '<') < 0 {
			continue
		}
		if out == nil {
			out = make([]byte, 0, len(src)+len(body))
		}
		out = append(out, src[copied:bodyStart]...)
		out = escapeBody(out, body)
		copied = bodyStart + end
	}
	if out == nil {
		return src
	}
	return append(out, src[copied:]...)
}

var cdataOpen, cdataClose = []byte("<![CDATA["), []byte("]]>")

// escapeBody appends body with '<', '>' and '&' escaped; CDATA sections,
// already text, are kept as they are.
func escapeBody(out, body []byte) []byte {
	for i := 0; i < len(body); i++ {
		c := body[i]
		if c == '<' && bytes.HasPrefix(body[i:], cdataOpen) {
			if e := bytes.Index(body[i:], cdataClose); e >= 0 {
				out = append(out, body[i:i+e+len(cdataClose)]...)
				i += e + len(cdataClose) - 1
				continue
			}
		}
		switch c {
		case '<':
			out = append(out, "&lt;"...)
		case '>':
			out = append(out, "&gt;"...)
		case '&':
			out = append(out, "&amp;"...)
		default:
			out = append(out, c)
		}
	}
	return out
}

// opaqueAt returns the opaque element name whose start tag begins at
// src[i] ('<'), or nil.
func opaqueAt(src []byte, i int) []byte {
	for _, n := range opaqueElements {
		j := i + 1 + len(n)
		if j < len(src) && bytes.Equal(src[i+1:j], n) {
			switch src[j] {
			case '>', ' ', '\t', '\r', '\n', '/':
				return n
			}
		}
	}
	return nil
}

// Limits on a project's web links: the Manager shows them in a menu.
const (
	maxGUIURLs     = 100
	maxGUIURLField = 2048
)

// parseGUIURLs reads the <gui_url> entries of a <gui_urls> body as the C++
// client's GUI_URL parser does: each field is the text up to its end tag,
// entities decoded by xml_unescape's rules, whatever else it holds (a user
// name with "<" pasted in by the server) kept as text. Only http and https
// links are kept: the Manager opens them in a browser.
func parseGUIURLs(body string) []boinc.GUIURL {
	var out []boinc.GUIURL
	for len(out) < maxGUIURLs {
		i := strings.Index(body, "<gui_url>")
		if i < 0 {
			break
		}
		body = body[i+len("<gui_url>"):]
		j := strings.Index(body, "</gui_url>")
		if j < 0 {
			break
		}
		entry := body[:j]
		body = body[j+len("</gui_url>"):]
		u := boinc.GUIURL{
			Name:        guiField(entry, "name"),
			Description: guiField(entry, "description"),
			URL:         guiField(entry, "url"),
		}
		low := strings.ToLower(u.URL)
		if u.Name == "" || !strings.HasPrefix(low, "http://") && !strings.HasPrefix(low, "https://") {
			continue
		}
		out = append(out, u)
	}
	return out
}

func guiField(entry, tag string) string {
	i := strings.Index(entry, "<"+tag+">")
	if i < 0 {
		return ""
	}
	v := entry[i+len(tag)+2:]
	j := strings.Index(v, "</"+tag+">")
	if j < 0 {
		return ""
	}
	v = strings.TrimSpace(xmlUnescape(v[:j]))
	if len(v) > maxGUIURLField {
		v = v[:maxGUIURLField]
	}
	return strings.ToValidUTF8(v, "\uFFFD")
}

// xmlUnescape is the C++ client's xml_unescape: the five predefined
// entities and numeric references are decoded, anything else starting with
// '&' is kept as it is.
func xmlUnescape(s string) string {
	if !strings.Contains(s, "&") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '&' {
			b.WriteByte(s[i])
			continue
		}
		rest := s[i:]
		decoded := false
		for _, e := range [...]struct{ ent, ch string }{{"&lt;", "<"}, {"&gt;", ">"}, {"&quot;", "\""}, {"&apos;", "'"}, {"&amp;", "&"}} {
			if strings.HasPrefix(rest, e.ent) {
				b.WriteString(e.ch)
				i += len(e.ent) - 1
				decoded = true
				break
			}
		}
		if decoded {
			continue
		}
		if strings.HasPrefix(rest, "&#") {
			if end := strings.IndexByte(rest, ';'); end > 2 && end < 10 {
				num, base := rest[2:end], 10
				if num[0] == 'x' || num[0] == 'X' {
					num, base = num[1:], 16
				}
				if n, err := strconv.ParseUint(num, base, 32); err == nil && xmlChar(rune(n)) {
					b.WriteRune(rune(n))
					i += end
					continue
				}
			}
		}
		b.WriteByte('&')
	}
	return b.String()
}
