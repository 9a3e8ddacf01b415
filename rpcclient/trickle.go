package rpcclient

import (
	"fmt"
	"strconv"
	"strings"
)

// Limits on the trickle-downs of one reply. A server keeps each
// msg_to_host in a blob of MaxTrickleDownBytes
// (db/boinc_db_types.h MSG_TO_HOST_BLOB_SIZE); anything larger is not
// something a BOINC server sent.
const (
	MaxTrickleDownBytes = 256 * 1024
	MaxTrickleDowns     = 1000
)

// TrickleDown is one <trickle_down> of a reply: the task it is for, the
// server's time stamp, and the body the app gets, which is everything in
// the element but the <result_name> and <time> lines.
type TrickleDown struct {
	ResultName string
	Time       int64
	Body       string
}

// parseTrickleDown splits a <trickle_down> body as cs_trickle.cpp
// handle_trickle_down does: line by line, a line holding <result_name>
// or <time> gives that field, every other line goes into the body.
func parseTrickleDown(raw string) (TrickleDown, error) {
	var td TrickleDown
	var body strings.Builder
	for line := range strings.SplitAfterSeq(raw, "\n") {
		if v, ok := lineTag(line, "result_name"); ok {
			td.ResultName = strings.TrimSpace(v)
			continue
		}
		if v, ok := lineTag(line, "time"); ok {
			v = strings.TrimSpace(v)
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				// parse_int's atoi reads leading digits; a fraction
				// ("1700000000.5") keeps its integer part.
				f, ferr := strconv.ParseFloat(v, 64)
				if ferr != nil || f < 0 || f > 1<<53 {
					return td, fmt.Errorf("<time>: invalid number %q", v)
				}
				n = int64(f)
			}
			if n < 0 {
				return td, fmt.Errorf("<time>: negative %d", n)
			}
			td.Time = n
			continue
		}
		body.WriteString(line)
	}
	td.Body = strings.TrimLeft(body.String(), "\r\n")
	if td.ResultName == "" {
		return td, fmt.Errorf("no <result_name>")
	}
	return td, nil
}

// lineTag returns the text between <tag> and </tag> on one line.
func lineTag(line, tag string) (string, bool) {
	open, closeTag := "<"+tag+">", "</"+tag+">"
	i := strings.Index(line, open)
	if i < 0 {
		return "", false
	}
	rest := line[i+len(open):]
	j := strings.Index(rest, closeTag)
	if j < 0 {
		return "", false
	}
	return unescapeText(rest[:j]), true
}

// addTrickleDown keeps a trickle-down or says why not; a bad one costs
// only itself.
// The list of refusals is itself bounded (MaxReplyMessages lines).
func (r *SchedulerReply) addTrickleDown(raw string) {
	r.trickleDownsSeen++
	n := r.trickleDownsSeen
	refuse := func(format string, args ...any) {
		if len(r.RefusedTrickleDowns) < MaxReplyMessages {
			r.RefusedTrickleDowns = append(r.RefusedTrickleDowns, fmt.Sprintf("trickle_down #%d", n)+fmt.Sprintf(format, args...))
		}
	}
	if len(raw) > MaxTrickleDownBytes {
		name := "?"
		if td, err := parseTrickleDown(raw); err == nil {
			name = td.ResultName
		}
		refuse(" for task %q: %d bytes, more than the limit of %d", name, len(raw), MaxTrickleDownBytes)
		return
	}
	if len(r.TrickleDowns) >= MaxTrickleDowns {
		refuse(": more than %d in one reply", MaxTrickleDowns)
		return
	}
	td, err := parseTrickleDown(raw)
	if err != nil {
		refuse(": %v", err)
		return
	}
	r.TrickleDowns = append(r.TrickleDowns, td)
}
