package guirpc

import (
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"
)

// appendFF's fast path must print exactly what strconv (and C's %f)
// print: whole numbers, times to the microsecond, values whose rounding
// is close to a tie, signs, and the edges of the fast path's ranges.
func TestAppendFFMatchesStrconv(t *testing.T) {
	vals := []float64{
		0, math.Copysign(0, -1), 1, -1, 0.5, -0.5, 1e-7, -1e-7, 4e-7, 5e-7, 6e-7,
		0.0000005, 0.0000015, 0.0000025, 1.0000005, 2.5e-6, 123.4567895, 3600.5, 3590.25,
		1795600721.123456, 1795600721.1234565, 1795600721.999999, 1795600721.9999995,
		1 << 32, 1<<32 - 0.5, 1<<32 + 0.5, 1 << 52, 1<<53 - 1, 1 << 53, 1<<53 + 2, 1e15, 1e16, 3.6e12, 4.5e9,
		math.MaxFloat64, -math.MaxFloat64, math.SmallestNonzeroFloat64, math.NaN(), math.Inf(1), math.Inf(-1),
		0.1, 0.2, 0.3, 0.7, 1.1, 2.675, 1.005, 1.0000004999999999, 1.0000005000000001,
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200000 {
		switch rng.IntN(4) {
		case 0: // times to the microsecond, as unix() makes them
			vals = append(vals, float64(1_700_000_000_000_000+rng.Int64N(200_000_000_000_000))/1e6)
		case 1: // any magnitude
			vals = append(vals, math.Ldexp(rng.Float64(), rng.IntN(80)-20))
		case 2: // near a rounding tie at the 6th decimal
			vals = append(vals, (float64(rng.Int64N(1e12))+0.5)/1e6)
		default:
			vals = append(vals, -math.Ldexp(rng.Float64(), rng.IntN(40)))
		}
	}
	for _, v := range vals {
		w := v
		if math.IsNaN(w) || math.IsInf(w, 0) {
			w = 0
		}
		want := strconv.FormatFloat(w, 'f', 6, 64)
		if got := string(appendFF(nil, v)); got != want {
			t.Fatalf("appendFF(%v) = %q, want %q", v, got, want)
		}
	}
}

func FuzzAppendFF(f *testing.F) {
	for _, v := range []float64{0, -0.5, 1795600721.123456, 1<<32 - 0.5, 1e-7} {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v float64) {
		w := v
		if math.IsNaN(w) || math.IsInf(w, 0) {
			w = 0
		}
		if got, want := string(appendFF(nil, v)), strconv.FormatFloat(w, 'f', 6, 64); got != want {
			t.Fatalf("appendFF(%v) = %q, want %q", v, got, want)
		}
	})
}

func TestEscape(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", ""},
		{"bq00_1795600721_00000_0", "bq00_1795600721_00000_0"},
		{"http://127.0.0.1/p?a=1&b=2", "http://127.0.0.1/p?a=1&amp;b=2"},
		{`<"it's">`, "&lt;&quot;it&apos;s&quot;&gt;"},
		{"tab\there\nnl\x7f", "tab&#9;here&#10;nl&#127;"},
		{"Rosetta@home é ✓", "Rosetta@home é ✓"},
		{"bad \xff byte", "bad \uFFFD byte"},
		{"bad \xfe & <", "bad \uFFFD &amp; &lt;"},
		{"é&", "é&amp;"},
	} {
		if got := escape(c.in); got != c.want {
			t.Errorf("escape(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// A connection keeps a big reply buffer while its replies need one and
// for keepBig after the last that did, then lets it go.
func TestReplyBufferKept(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	big := strings.Repeat("x", keepReply+1)
	steps := []struct {
		at    time.Duration
		reply string
		kept  bool // a buffer above keepReply stays after the reply
	}{
		{0, "small", false},
		{time.Second, big, true},
		{2 * time.Second, "small", true},
		{time.Second + keepBig, "small", true}, // keepBig after the big one: kept
		{2*time.Second + keepBig, "small", false},
		{4*time.Second + keepBig, big, true},
		{5*time.Second + keepBig, big, true},
		{6*time.Second + 2*keepBig, "small", false},
	}
	var cc conn
	for i, st := range steps {
		w := cc.replyWriter()
		w.WriteString(st.reply)
		cc.framed()
		cc.sent(t0.Add(st.at))
		if got := cc.w.Cap() > keepReply; got != st.kept {
			t.Errorf("step %d (%v, %d bytes): big buffer kept %v, want %v", i, st.at, len(st.reply), got, st.kept)
		}
	}
}
