package codesign

import (
	"crypto/rand"
	"crypto/rsa"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// fixtures are the BOINC 7.20 signing captures (testdata/ at the module root).
const fixtures = "../testdata/boinc-7.20/signing/"

func read(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(fixtures, name))
	if err != nil {
		t.Fatalf("fixture: %v", err)
	}
	return string(b)
}

// The real client's test vector: the fixture app verifies with the
// fixture key, and any change to the file or signature is refused.
func TestFixtureVector(t *testing.T) {
	key := read(t, "code_sign_public_key.txt")
	sig := read(t, "refapp_file_signature.txt")
	app := filepath.Join(fixtures, "refapp_1.00_x86_64-pc-linux-gnu.sh")
	if err := VerifyFile(app, key, sig); err != nil {
		t.Fatalf("fixture signature rejected: %v", err)
	}
	pub, err := ParsePublicKey(key)
	if err != nil {
		t.Fatal(err)
	}
	if got := FormatPublicKey(pub); got != key {
		t.Fatalf("key text does not round-trip:\n%s\nwant\n%s", got, key)
	}
	if err := VerifyMD5Hex(pub, "00000000000000000000000000000000", sig); err == nil {
		t.Fatal("signature accepted for another md5")
	}
	if err := VerifyFile(app, key, ""); !errors.Is(err, ErrNoSignature) {
		t.Fatalf("missing signature: %v", err)
	}
}

func TestSignVerifyRoundTrip(t *testing.T) {
	k, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	sig, err := SignMD5Hex(k, "8894bb6c30711b942d0d8cef294d2721")
	if err != nil {
		t.Fatal(err)
	}
	pub, err := ParsePublicKey(FormatPublicKey(&k.PublicKey))
	if err != nil {
		t.Fatal(err)
	}
	if err := VerifyMD5Hex(pub, "8894bb6c30711b942d0d8cef294d2721", sig); err != nil {
		t.Fatal(err)
	}
}

func TestParseErrors(t *testing.T) {
	for _, in := range []string{"", "1024", "x\n00\n.", "1024\n00\n.", "1024\nzz\n.", "1024\n0000"} {
		if _, err := ParsePublicKey(in); err == nil {
			t.Errorf("ParsePublicKey(%q) accepted", in)
		}
	}
}
