package testsupport

import (
	"bytes"
	"encoding/json"
	"strings"
	"sync"
	"time"
)

// LogBuffer is a thread-safe sink for a daemon's JSON log (slog's
// JSONHandler), searchable by the test while the daemon keeps writing.
type LogBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *LogBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *LogBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// LogRecord is one decoded JSON log line.
type LogRecord map[string]any

// Str is the string attribute key, or "".
func (r LogRecord) Str(key string) string {
	s, _ := r[key].(string)
	return s
}

// Num is the numeric attribute key, or 0.
func (r LogRecord) Num(key string) float64 {
	f, _ := r[key].(float64)
	return f
}

// Time is when the record was logged, or the zero time.
func (r LogRecord) Time() time.Time {
	t, _ := time.Parse(time.RFC3339Nano, r.Str("time"))
	return t
}

// Records decodes every complete line logged so far.
func (b *LogBuffer) Records() []LogRecord {
	var out []LogRecord
	for _, line := range strings.Split(b.String(), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		var r LogRecord
		if err := json.Unmarshal([]byte(line), &r); err == nil {
			out = append(out, r)
		}
	}
	return out
}

// Find returns the records with message msg whose string attributes match
// attrs (key, value pairs); a value matches when it is a substring.
func (b *LogBuffer) Find(msg string, attrs ...string) []LogRecord {
	var out []LogRecord
next:
	for _, r := range b.Records() {
		if r.Str("msg") != msg {
			continue
		}
		for i := 0; i+1 < len(attrs); i += 2 {
			if !strings.Contains(r.Str(attrs[i]), attrs[i+1]) {
				continue next
			}
		}
		out = append(out, r)
	}
	return out
}

// Tail is the last n bytes of s, marked with "…" when cut.
func Tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}
