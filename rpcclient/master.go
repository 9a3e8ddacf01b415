package rpcclient

import (
	"bytes"
	"slices"
	"strings"
)

var (
	schedOpen  = []byte("<scheduler>")
	schedClose = []byte("</scheduler>")
	linkPrefix = []byte(`<link rel="boinc_scheduler" href="`)
)

// ParseMasterPage extracts scheduler URLs from a project's master page as
// client/scheduler_op.cpp parse_master_file does: <scheduler>URL</scheduler>
// anywhere (HTML comments included) and <link rel="boinc_scheduler"
// href="URL"> matched as a literal prefix. Duplicates are dropped, first
// occurrence order kept.
func ParseMasterPage(data []byte) []string {
	type hit struct {
		at  int
		url string
	}
	var hits []hit
	for off := 0; ; {
		i := bytes.Index(data[off:], schedOpen)
		if i < 0 {
			break
		}
		start := off + i + len(schedOpen)
		j := bytes.Index(data[start:], schedClose)
		if j < 0 {
			break
		}
		if u := strings.TrimSpace(string(data[start : start+j])); u != "" {
			hits = append(hits, hit{off + i, u})
		}
		off = start + j + len(schedClose)
	}
	for off := 0; ; {
		i := bytes.Index(data[off:], linkPrefix)
		if i < 0 {
			break
		}
		start := off + i + len(linkPrefix)
		end := start
		for end < len(data) && !isURLEnd(data[end]) {
			end++
		}
		if end > start {
			hits = append(hits, hit{off + i, string(data[start:end])})
		}
		off = end
	}
	// Report in page order, whichever form each URL came in.
	slices.SortStableFunc(hits, func(a, b hit) int { return a.at - b.at })
	var urls []string
	seen := make(map[string]bool, len(hits))
	for _, h := range hits {
		if !seen[h.url] {
			seen[h.url] = true
			urls = append(urls, h.url)
		}
	}
	return urls
}

func isURLEnd(c byte) bool {
	return c == '"' || c == '>' || c <= ' ' || c == 0x7f
}
