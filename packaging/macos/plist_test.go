package macos

import (
	"encoding/xml"
	"fmt"
	"os"
	"strings"
	"testing"
)

// plistValue is one decoded plist value: a string, integer, bool, array
// or dict (the types the file uses).
type plistValue any

// decodePlist decodes the <plist> document into Go values.
func decodePlist(data []byte) (map[string]plistValue, error) {
	d := xml.NewDecoder(strings.NewReader(string(data)))
	d.Strict = true
	for {
		tok, err := d.Token()
		if err != nil {
			return nil, fmt.Errorf("no <plist><dict>: %w", err)
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "dict" {
			v, err := decodeValue(d, se)
			if err != nil {
				return nil, err
			}
			return v.(map[string]plistValue), nil
		}
	}
}

func decodeValue(d *xml.Decoder, se xml.StartElement) (plistValue, error) {
	switch se.Name.Local {
	case "string", "integer":
		var s string
		if err := d.DecodeElement(&s, &se); err != nil {
			return nil, err
		}
		return s, nil
	case "true", "false":
		if err := d.Skip(); err != nil {
			return nil, err
		}
		return se.Name.Local == "true", nil
	case "array", "dict":
		var arr []plistValue
		dict := map[string]plistValue{}
		key := ""
		for {
			tok, err := d.Token()
			if err != nil {
				return nil, err
			}
			switch t := tok.(type) {
			case xml.EndElement:
				if se.Name.Local == "array" {
					return arr, nil
				}
				return dict, nil
			case xml.StartElement:
				if t.Name.Local == "key" {
					if err := d.DecodeElement(&key, &t); err != nil {
						return nil, err
					}
					if _, dup := dict[key]; dup {
						return nil, fmt.Errorf("key %s twice", key)
					}
					continue
				}
				v, err := decodeValue(d, t)
				if err != nil {
					return nil, err
				}
				if se.Name.Local == "array" {
					arr = append(arr, v)
				} else {
					if key == "" {
						return nil, fmt.Errorf("<%s> without a <key>", t.Name.Local)
					}
					dict[key], key = v, ""
				}
			}
		}
	}
	return nil, fmt.Errorf("unexpected <%s>", se.Name.Local)
}

// runFlags are the `boincd run` flags that take a value (cmd/boincd
// runDaemon); the plist may use only these.
var runFlags = map[string]bool{"--dir": true, "--config": true, "--log_format": true, "--log_level": true, "--stop_timeout": true, "--gui_rpc_port": true}

func TestPlist(t *testing.T) {
	data, err := os.ReadFile("org.boincd.boincd.plist")
	if err != nil {
		t.Fatal(err)
	}
	p, err := decodePlist(data)
	if err != nil {
		t.Fatalf("org.boincd.boincd.plist: %v", err)
	}
	const dataDir = "/Library/Application Support/boincd"
	args, _ := p["ProgramArguments"].([]plistValue)
	var argv []string
	for _, a := range args {
		s, _ := a.(string)
		argv = append(argv, s)
	}
	if len(argv) < 4 || !strings.HasSuffix(argv[0], "/boincd") || argv[1] != "run" {
		t.Fatalf("ProgramArguments %q: not `boincd run …`", argv)
	}
	dir := ""
	for i := 2; i < len(argv); i += 2 {
		if !runFlags[argv[i]] || i+1 >= len(argv) {
			t.Errorf("ProgramArguments %q: %q is not a `boincd run` flag with a value", argv, argv[i])
			continue
		}
		if argv[i] == "--dir" {
			dir = argv[i+1]
		}
	}
	keepAlive, _ := p["KeepAlive"].(map[string]plistValue)
	checks := []struct {
		what string
		ok   bool
	}{
		{"Label org.boincd.boincd", p["Label"] == "org.boincd.boincd"},
		{"--dir is the data directory", dir == dataDir},
		{"WorkingDirectory is the data directory", p["WorkingDirectory"] == dataDir},
		{"UserName set and not root", p["UserName"] != nil && p["UserName"] != "root" && p["UserName"] != ""},
		{"RunAtLoad", p["RunAtLoad"] == true},
		{"KeepAlive restarts after a crash only", keepAlive["SuccessfulExit"] == false},
		{"ExitTimeOut above boincd's 60 s stop timeout", p["ExitTimeOut"] == "90"},
		{"logs to a file", p["StandardErrorPath"] != nil && p["StandardOutPath"] != nil},
	}
	for _, c := range checks {
		if !c.ok {
			t.Errorf("plist: want %s; got %v", c.what, p)
		}
	}
}
