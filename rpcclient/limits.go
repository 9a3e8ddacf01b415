package rpcclient

import (
	"bytes"
	"fmt"
	"math"
	"net/url"
)

// Limits on what one scheduler reply may contain. The byte cap on the
// reply (Options.MaxReplyBytes) bounds the input; these bound what the
// parser builds from it, so that a hostile reply of a few MiB cannot make
// the client allocate hundreds (a start tag with millions of attributes,
// millions of nested elements, a million tiny <result>s). Real replies are
// far inside every limit: the deepest BOINC reply (venue preferences)
// nests 5 levels, the largest servers send a few hundred jobs per RPC.
const (
	// MaxReplyDepth is the deepest element nesting accepted.
	MaxReplyDepth = 64
	// MaxReplyAttrs is the most attributes one element may carry.
	MaxReplyAttrs = 32
	// MaxReplyItems caps each list in a reply: apps, file_infos,
	// app_versions, workunits, results, project files, result acks,
	// aborts and deleted files. The C++ client keeps at most 1000 queued
	// jobs per project (WF_MAX_RUNNABLE_JOBS); ten times that leaves room
	// for acks of a long-offline host's reports.
	MaxReplyItems = 10000
	// MaxReplyMessages caps the <message>s kept from one reply (each one
	// is logged).
	MaxReplyMessages = 100
	// MaxFileBytes is the largest nbytes / max_nbytes accepted (1 PiB):
	// beyond it a size is nonsense, and it keeps sums of sizes exact.
	MaxFileBytes = 1 << 50
	// MaxFpops is the largest rsc_fpops_est / rsc_fpops_bound accepted:
	// 1e24 flops is 31 million years at 1 Gflops, and keeps every
	// estimate derived from it finite.
	MaxFpops = 1e24
	// MaxFlops is the largest app version <flops> accepted (1 exaflops);
	// MinFlops the smallest non-zero one (a slower claim would turn any
	// job into an estimate of centuries).
	MaxFlops = 1e18
	MinFlops = 1e3
	// MaxReplyDelay caps request_delay and next_rpc_delay (seconds): a
	// larger delay, or one that does not fit a time.Duration, would take
	// the project out of the client's reach for good.
	MaxReplyDelay = 28 * 86400
)

// checkMarkup is a structural pre-scan run before either tokenizer: one
// pass over the bytes that refuses document type declarations (the only
// way to declare entities, hence entity-expansion bombs), nesting deeper
// than MaxReplyDepth and elements with more than MaxReplyAttrs
// attributes. encoding/xml would build the attribute list of a start
// tag in full before the parser could look at it, so the count has to
// happen on the raw bytes. Anything else malformed is left to the
// tokenizers to report.
func checkMarkup(src []byte) error {
	depth := 0
	for i := 0; i < len(src); {
		lt := bytes.IndexByte(src[i:], '<')
		if lt < 0 {
			return nil
		}
		i += lt
		rest := src[i:]
		switch {
		case bytes.HasPrefix(rest, []byte("<!--")):
			end := bytes.Index(rest[4:], []byte("-->"))
			if end < 0 {
				return nil
			}
			i += 4 + end + 3
		case bytes.HasPrefix(rest, []byte("<![CDATA[")):
			end := bytes.Index(rest[9:], []byte("]]>"))
			if end < 0 {
				return nil
			}
			i += 9 + end + 3
		case bytes.HasPrefix(rest, []byte("<?")):
			end := bytes.Index(rest[2:], []byte("?>"))
			if end < 0 {
				return nil
			}
			i += 2 + end + 2
		case bytes.HasPrefix(rest, []byte("<!")):
			return fmt.Errorf("markup declaration at offset %d: DTDs and entity declarations are not accepted", i)
		case bytes.HasPrefix(rest, []byte("</")):
			end := bytes.IndexByte(rest, '>')
			if end < 0 {
				return nil
			}
			if depth > 0 {
				depth--
			}
			i += end + 1
		default:
			n, attrs, selfClose, ok := scanStartTag(rest)
			if !ok {
				return nil
			}
			if attrs > MaxReplyAttrs {
				return fmt.Errorf("element at offset %d has more than %d attributes", i, MaxReplyAttrs)
			}
			if !selfClose {
				depth++
				if depth > MaxReplyDepth {
					return fmt.Errorf("elements nested deeper than %d levels at offset %d", MaxReplyDepth, i)
				}
			}
			i += n
		}
	}
	return nil
}

// scanStartTag measures the start tag at the head of b: its length, how
// many attributes it has (an '=' outside quotes), and whether it closes
// itself. ok is false when the tag does not end.
func scanStartTag(b []byte) (n, attrs int, selfClose, ok bool) {
	var quote byte
	for j := 1; j < len(b); j++ {
		c := b[j]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		case c == '=':
			attrs++
			if attrs > MaxReplyAttrs {
				return j, attrs, false, true
			}
		case c == '>':
			return j + 1, attrs, b[j-1] == '/', true
		}
	}
	return 0, 0, false, false
}

// checkTransferURL accepts the http and https URLs a download or upload
// may use; file://, ftp:// and the like would make the transfer code read
// local files or leave the web.
func checkTransferURL(elem, s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Errorf("<%s> %q: %w", elem, s, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("<%s> %q: scheme %q is not http or https", elem, s, u.Scheme)
	}
	if u.Host == "" {
		return fmt.Errorf("<%s> %q: no host", elem, s)
	}
	return nil
}

// CheckSchedulerURL reports whether a scheduler URL from a master page is
// one the client may post to: http or https with a host.
func CheckSchedulerURL(s string) error { return checkTransferURL("scheduler", s) }

// checkRange refuses a number outside [lo, hi], naming the element.
func checkRange(elem string, v, lo, hi float64) error {
	if math.IsNaN(v) || v < lo || v > hi {
		return fmt.Errorf("<%s> %g out of range [%g, %g]", elem, v, lo, hi)
	}
	return nil
}
