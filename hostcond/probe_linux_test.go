package hostcond

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestIdleSecondsIn(t *testing.T) {
	now := time.Date(2024, 1, 1, 12, 0, 0, 0, time.UTC)
	type dev struct {
		name string
		ago  time.Duration
	}
	tests := []struct {
		name string
		devs []dev
		want float64
	}{
		{"nothing to look at", nil, -1},
		{"only ptmx and tty0", []dev{{"pts/ptmx", time.Second}, {"tty0", time.Second}, {"tty", time.Second}}, -1},
		{"newest terminal wins", []dev{{"pts/0", time.Hour}, {"pts/3", 90 * time.Second}, {"tty1", 2 * time.Hour}}, 90},
		{"console", []dev{{"tty63", 5 * time.Minute}, {"tty64", time.Second}}, 300},
		{"input devices", []dev{{"pts/1", time.Hour}, {"input/event4", 10 * time.Second}, {"input/mice", time.Minute}}, 10},
		{"future access time is now", []dev{{"input/mouse0", -time.Minute}}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			for _, d := range tc.devs {
				path := filepath.Join(root, d.name)
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, nil, 0o600); err != nil {
					t.Fatal(err)
				}
				at := now.Add(-d.ago)
				if err := os.Chtimes(path, at, now.Add(-48*time.Hour)); err != nil {
					t.Fatal(err)
				}
			}
			if got := idleSecondsIn(root, now); got != tc.want {
				t.Fatalf("idle = %g, want %g", got, tc.want)
			}
		})
	}
}

func TestOnBatteryIn(t *testing.T) {
	type supply map[string]string
	tests := []struct {
		name     string
		supplies map[string]supply
		want     bool
	}{
		{"no power_supply class", nil, false},
		{"desktop: mains only", map[string]supply{"AC": {"type": "Mains", "online": "1"}}, false},
		{"laptop on mains, charging", map[string]supply{
			"AC":   {"type": "Mains", "online": "1"},
			"BAT0": {"type": "Battery", "status": "Charging", "scope": "System"},
		}, false},
		{"laptop unplugged", map[string]supply{
			"AC":   {"type": "Mains", "online": "0\n"},
			"BAT0": {"type": "Battery\n", "status": "Discharging\n"},
		}, true},
		{"no mains entry, discharging", map[string]supply{"BAT1": {"type": "Battery", "status": "Discharging"}}, true},
		{"USB-C power online", map[string]supply{
			"ucsi-source-psy-USBC000:001": {"type": "USB", "online": "1"},
			"BAT0":                        {"type": "Battery", "status": "Discharging"},
		}, false},
		{"unplugged, battery full", map[string]supply{
			"AC":   {"type": "Mains", "online": "0"},
			"BAT0": {"type": "Battery", "status": "Full"},
		}, false},
		{"only a wireless mouse discharging", map[string]supply{
			"AC":              {"type": "Mains", "online": "1"},
			"hidpp_battery_0": {"type": "Battery", "status": "Discharging", "scope": "Device"},
		}, false},
		{"desktop without AC entry, mouse discharging", map[string]supply{
			"hidpp_battery_0": {"type": "Battery", "status": "Discharging", "scope": "Device"},
		}, false},
		{"unreadable entry", map[string]supply{"weird": {}}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := filepath.Join(t.TempDir(), "power_supply")
			if tc.supplies != nil {
				if err := os.Mkdir(root, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			for name, files := range tc.supplies {
				dir := filepath.Join(root, name)
				if err := os.Mkdir(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				for f, v := range files {
					if err := os.WriteFile(filepath.Join(dir, f), []byte(v), 0o644); err != nil {
						t.Fatal(err)
					}
				}
			}
			if got := onBatteryIn(root); got != tc.want {
				t.Fatalf("onBattery = %v, want %v", got, tc.want)
			}
		})
	}
}

// IdleProbe lists the devices once and again only after
// IdleDeviceRefresh or when one has gone.
func TestIdleProbeRelists(t *testing.T) {
	root := t.TempDir()
	now := time.Date(2024, 1, 1, 12, 0, 0, 0, time.UTC)
	touch := func(name string, ago time.Duration) {
		t.Helper()
		path := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(path, now.Add(-ago), now); err != nil {
			t.Fatal(err)
		}
	}
	touch("pts/0", time.Hour)
	p := &IdleProbe{dev: root}
	steps := []struct {
		name  string
		at    time.Duration
		setup func()
		want  float64
	}{
		{"first call lists", 0, nil, 3600},
		{"a new terminal is not listed yet", time.Second, func() { touch("pts/1", 0) }, 3601},
		{"listed again after the refresh period", IdleDeviceRefresh, nil, IdleDeviceRefresh.Seconds()},
		{"a terminal gone: the rest still count", IdleDeviceRefresh + time.Second, func() { os.Remove(filepath.Join(root, "pts/1")); touch("pts/2", 10*time.Second) }, 3600 + IdleDeviceRefresh.Seconds() + 1},
		{"and the next call lists again", IdleDeviceRefresh + 2*time.Second, nil, 10 + IdleDeviceRefresh.Seconds() + 2},
	}
	for _, s := range steps {
		if s.setup != nil {
			s.setup()
		}
		if got := p.IdleSeconds(now.Add(s.at)); got != s.want {
			t.Fatalf("%s: idle = %g, want %g", s.name, got, s.want)
		}
	}
}
