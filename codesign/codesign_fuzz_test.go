package codesign

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
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

func fixtureKeyText() string {
	b, ok := fuzzSeedFile("scheduler/01_reply_first_contact_with_work.xml")
	if !ok {
		return ""
	}
	s := string(b)
	i := strings.Index(s, "<code_sign_key>")
	j := strings.Index(s, "</code_sign_key>")
	if i < 0 || j < i {
		return ""
	}
	return s[i+len("<code_sign_key>") : j]
}

// FuzzParsePublicKey: a key text either fails cleanly or gives a usable
// key that FormatPublicKey writes back to text that parses to the same
// key.
func FuzzParsePublicKey(f *testing.F) {
	if k := fixtureKeyText(); k != "" {
		f.Add(k)
	}
	inline := make([]byte, 2*fieldLen)
	for i := 0; i < fieldLen; i++ {
		inline[i] = 0xc5 ^ byte(i)
	}
	inline[2*fieldLen-1] = 3
	f.Add("1024\n" + HexLines(inline))
	f.Add("1024\n.\n")
	f.Add("0\nff\n.")
	f.Add("99999999999999999999\n00\n.")
	f.Fuzz(func(t *testing.T, text string) {
		pub, err := ParsePublicKey(text)
		if err != nil {
			if pub != nil {
				t.Fatal("key and error both returned")
			}
			if !strings.HasPrefix(err.Error(), "code sign key: ") {
				t.Fatalf("error %q does not say what failed", err)
			}
			return
		}
		if pub.N.BitLen() < 512 || pub.N.BitLen() > 8*fieldLen || pub.E < 3 {
			t.Fatalf("implausible key accepted: %d bits, e=%d", pub.N.BitLen(), pub.E)
		}
		again, err := ParsePublicKey(FormatPublicKey(pub))
		if err != nil || again.N.Cmp(pub.N) != 0 || again.E != pub.E {
			t.Fatalf("format/parse round trip: %v", err)
		}
		// Verification with a hostile key and signature must fail cleanly.
		_ = VerifyMD5Hex(pub, "d41d8cd98f00b204e9800998ecf8427e", text)
	})
}

// FuzzParseHexLines: HexLines output parses back to the same bytes, and
// any input either decodes or fails without panicking.
func FuzzParseHexLines(f *testing.F) {
	f.Add("00ff\n.\n", []byte{1, 2, 3})
	f.Add("0 0\tf f\n.", []byte{})
	f.Add("abc\n.", bytes.Repeat([]byte{0xab}, 70))
	f.Add("no dot", []byte(nil))
	f.Fuzz(func(t *testing.T, text string, raw []byte) {
		if b, err := ParseHexLines(text); err != nil && b != nil {
			t.Fatal("bytes and error both returned")
		}
		got, err := ParseHexLines(HexLines(raw))
		if err != nil || !bytes.Equal(got, raw) {
			t.Fatalf("round trip of %x: %x, %v", raw, got, err)
		}
	})
}
