package taskrunner

import (
	"fmt"
	"strings"
)

// maxCommandLine bounds a server-supplied command line.
const maxCommandLine = 64 * 1024

// splitCommandLine splits a command line like a POSIX shell would, without
// expansions: blanks separate words, single quotes are literal, double
// quotes allow \" \\ \$ \` escapes, and a backslash outside quotes escapes
// the next character. An unterminated quote is an error.
func splitCommandLine(s string) ([]string, error) {
	if len(s) > maxCommandLine {
		return nil, fmt.Errorf("command line is %d bytes, limit %d", len(s), maxCommandLine)
	}
	var args []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			if inWord {
				args = append(args, cur.String())
				cur.Reset()
				inWord = false
			}
		case c == '\'':
			inWord = true
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, fmt.Errorf("command line %q: unterminated single quote at byte %d", s, i)
			}
			cur.WriteString(s[i+1 : i+1+j])
			i += j + 1
		case c == '"':
			inWord = true
			closed := false
			for i++; i < len(s); i++ {
				d := s[i]
				if d == '"' {
					closed = true
					break
				}
				if d == '\\' && i+1 < len(s) && strings.IndexByte("\"\\$`", s[i+1]) >= 0 {
					i++
					d = s[i]
				}
				cur.WriteByte(d)
			}
			if !closed {
				return nil, fmt.Errorf("command line %q: unterminated double quote", s)
			}
		case c == '\\':
			inWord = true
			if i+1 < len(s) {
				i++
				cur.WriteByte(s[i])
			}
		default:
			inWord = true
			cur.WriteByte(c)
		}
	}
	if inWord {
		args = append(args, cur.String())
	}
	return args, nil
}
