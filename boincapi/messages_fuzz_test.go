package boincapi

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fuzzSeedFile returns a file of the BOINC 7.20 captures, searched for
// upwards from the package directory up to testdata/ at the module root;
// ok is false only if they were removed, and the inline seeds still run.
func fuzzSeedFile(rel string) ([]byte, bool) {
	dir, _ := os.Getwd()
	for range 6 {
		b, err := os.ReadFile(filepath.Join(dir, "testdata", "boinc-7.20", rel))
		if err == nil {
			return b, true
		}
		dir = filepath.Dir(dir)
	}
	return nil, false
}

// hangGuard turns a parse that runs for more than 10 s into a crash of the
// fuzz worker, which the fuzzing engine records as a failing input: hangs
// become corpus entries like panics do.
func hangGuard(input any) (stop func()) {
	t := time.AfterFunc(10*time.Second, func() { panic(fmt.Sprintf("hang: still parsing after 10s: %q", input)) })
	return func() { t.Stop() }
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

func closeTo(a, b float64) bool {
	return a == b || math.Abs(a-b) <= 1e-5*math.Max(math.Abs(a), math.Abs(b))
}

// FuzzParseAppStatus: an app writes whatever it likes into the app_status
// channel. The client must get finite numbers out of it, and what it would
// write back (FormatAppStatus) must parse to the same values.
func FuzzParseAppStatus(f *testing.F) {
	f.Add(FormatAppStatus(Status{CurrentCPUTime: 12.5, CheckpointCPUTime: 10, FractionDone: 0.25, WantNetwork: true}))
	f.Add("<current_cpu_time>1.000000e+01</current_cpu_time>\n<fraction_done>nan</fraction_done><want_network>inf</want_network>")
	f.Add("<fraction_done>1e400</fraction_done><checkpoint_cpu_time>-0x1p-2</checkpoint_cpu_time>")
	f.Add("<fraction_done> 0.5 </fraction_done></fraction_done><fraction_done>")
	f.Add(FormatHeartbeat(1e9, 4e9))
	f.Fuzz(func(t *testing.T, msg string) {
		s := ParseAppStatus(msg)
		for _, v := range []float64{s.CurrentCPUTime, s.CheckpointCPUTime, s.FractionDone} {
			if !finite(v) || math.Abs(v) > 1e300 {
				t.Fatalf("ParseAppStatus(%q) = %+v", msg, s)
			}
		}
		back := ParseAppStatus(FormatAppStatus(s))
		if !closeTo(back.CurrentCPUTime, s.CurrentCPUTime) || !closeTo(back.CheckpointCPUTime, s.CheckpointCPUTime) ||
			!closeTo(back.FractionDone, s.FractionDone) || back.WantNetwork != s.WantNetwork {
			t.Fatalf("round trip of %+v gave %+v", s, back)
		}
		for _, tag := range []string{"wss", "max_wss", "fraction_done"} {
			if v, ok := ParseDouble(msg, tag); ok && !finite(v) || !ok && v != 0 {
				t.Fatalf("ParseDouble(%q, %q) = %v, %v", msg, tag, v, ok)
			}
		}
	})
}

// FuzzShmemReceive: the segment is writable by the app, so the client's
// Receive must cope with any bytes in it: ok exactly when the flag was
// set, a message without NUL that fits the channel, the flag cleared
// afterwards. Then a message sent through one mapping arrives intact
// through the other (or is refused up front when it cannot fit).
func FuzzShmemReceive(f *testing.F) {
	seg := make([]byte, ShmemSize)
	seg[int(AppStatus)*ChannelSize] = 1
	copy(seg[int(AppStatus)*ChannelSize+1:], FormatAppStatus(Status{CurrentCPUTime: 3, FractionDone: 0.5}))
	f.Add(seg, "<quit/>")
	f.Add(bytes.Repeat([]byte{0xff}, ShmemSize), strings.Repeat("x", MaxMsgLen))
	f.Add([]byte{1, 0, 0, 0}, "a\x00b")
	f.Add([]byte{}, strings.Repeat("y", MaxMsgLen+1))

	path := filepath.Join(f.TempDir(), MmapFileName)
	client, err := CreateShmem(path)
	if err != nil {
		f.Fatal(err)
	}
	defer client.Close()
	app, err := OpenShmem(path)
	if err != nil {
		f.Fatal(err)
	}
	defer app.Close()
	f.Fuzz(func(t *testing.T, data []byte, msg string) {
		buf := make([]byte, ShmemSize)
		copy(buf, data)
		if err := app.r.writeAt(buf, 0); err != nil {
			t.Fatal(err)
		}
		for c := Channel(0); c < NumChannels; c++ {
			had, err := client.HasMsg(c)
			if err != nil {
				t.Fatal(err)
			}
			got, ok, err := client.Receive(c)
			if err != nil || ok != had {
				t.Fatalf("%s: Receive ok=%v err=%v, flag was %v", c, ok, err, had)
			}
			if strings.IndexByte(got, 0) >= 0 || len(got) > ChannelSize-1 || !ok && got != "" {
				t.Fatalf("%s: Receive gave %d bytes %q", c, len(got), got)
			}
			if still, _ := client.HasMsg(c); still {
				t.Fatalf("%s: flag still set after Receive", c)
			}
			s := ParseAppStatus(got)
			if !finite(s.FractionDone) || !finite(s.CurrentCPUTime) {
				t.Fatalf("%s: %q parsed to %+v", c, got, s)
			}
		}
		fits := len(msg) <= MaxMsgLen && strings.IndexByte(msg, 0) < 0
		sent, err := app.Send(AppStatus, msg)
		if fits != (err == nil) || fits && !sent {
			t.Fatalf("Send of %d bytes: sent=%v err=%v", len(msg), sent, err)
		}
		got, ok, err := client.Receive(AppStatus)
		if err != nil || ok != fits || fits && got != msg {
			t.Fatalf("sent %q, received %q ok=%v err=%v", msg, got, ok, err)
		}
	})
}

// FuzzParseInitData: init_data.xml comes from the client but sits in a
// directory the app (and whatever it runs) can write. Parsing must fail
// cleanly or give a usable fraction-done range.
func FuzzParseInitData(f *testing.F) {
	if b, ok := fuzzSeedFile("slot/init_data.xml"); ok {
		f.Add(b)
	}
	if b, err := os.ReadFile(filepath.Join("testdata", "init_data.xml")); err == nil {
		f.Add(b)
	}
	f.Add([]byte("<app_init_data><fraction_done_start>0.5</fraction_done_start><fraction_done_end>0.25</fraction_done_end><app_file>a</app_file></app_init_data>"))
	f.Add([]byte("<app_init_data><fraction_done_start>NaN</fraction_done_start></app_init_data>"))
	f.Add([]byte("<app_init_data><fraction_done_end>+Inf</fraction_done_end><host_info><p_ncpus>x</p_ncpus></host_info></app_init_data>"))
	f.Add([]byte("<app_init_data><project_preferences><a><b/></a></project_preferences></app_init_data>"))
	f.Fuzz(func(t *testing.T, data []byte) {
		stop := hangGuard(data)
		defer stop()
		d, err := ParseInitData(bytes.NewReader(data))
		if err != nil {
			if d != nil || !strings.HasPrefix(err.Error(), "init_data.xml: ") {
				t.Fatalf("bad error %v (data %v)", err, d != nil)
			}
			return
		}
		if !(d.FractionDoneStart >= 0 && d.FractionDoneStart < d.FractionDoneEnd && d.FractionDoneEnd <= 1) {
			t.Fatalf("fraction done range [%v, %v] accepted", d.FractionDoneStart, d.FractionDoneEnd)
		}
	})
}
