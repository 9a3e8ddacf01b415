package testproject

import (
	"crypto/rand"
	"crypto/rsa"
	"fmt"
	"strings"

	"github.com/boincd/boincd/codesign"
)

// BOINC's crypto (lib/crypt.cpp) stores keys in fixed 128-byte fields, so
// the modulus can be at most 1024 bits.
const signKeyBits = 1024

// signer holds the project's code-signing key.
type signer struct {
	key     *rsa.PrivateKey
	keyText string // <code_sign_key> body
}

// newSigner uses key, or generates one when key is nil.
func newSigner(key *rsa.PrivateKey) (*signer, error) {
	if key == nil {
		var err error
		if key, err = rsa.GenerateKey(rand.Reader, signKeyBits); err != nil {
			return nil, fmt.Errorf("generating %d-bit code-signing key: %w", signKeyBits, err)
		}
	}
	if bits := key.N.BitLen(); bits > signKeyBits {
		return nil, fmt.Errorf("code-signing key has %d bits; BOINC keys have at most %d", bits, signKeyBits)
	}
	if err := key.Validate(); err != nil {
		return nil, fmt.Errorf("code-signing key: %w", err)
	}
	return &signer{key: key, keyText: codesign.FormatPublicKey(&key.PublicKey)}, nil
}

func encodePublicKey(pub *rsa.PublicKey) string { return codesign.FormatPublicKey(pub) }

func decodePublicKey(text string) (*rsa.PublicKey, error) { return codesign.ParsePublicKey(text) }

// signMD5Hex signs the lower-case hex MD5 of data the way BOINC does.
func (s *signer) signMD5Hex(data []byte) (string, error) {
	return codesign.SignMD5Hex(s.key, md5Hex(data))
}

// verifyMD5Hex checks a signature made by signMD5Hex.
func verifyMD5Hex(pub *rsa.PublicKey, data []byte, sigText string) error {
	return codesign.VerifyMD5Hex(pub, md5Hex(data), sigText)
}

// uploadSignedText is what an output file's <xml_signature> signs; the
// upload handler checks it against the name and max_nbytes the client
// echoes (sched/file_upload_handler.cpp).
func uploadSignedText(name string, maxNBytes float64) string {
	return fmt.Sprintf("<name>%s</name><max_nbytes>%.0f</max_nbytes>", name, maxNBytes)
}

// RotateKey makes the server sign with key from now on (nil: a fresh
// key) and re-signs its app files. With signed, a client still holding
// the old key gets the new one with a <code_sign_key_signature> made with
// the old key (BOINC's key rollover: the signature of the MD5 of the new
// key's text); without, the new key comes bare, as a hostile server or a
// hijacked URL would send it.
func (s *Server) RotateKey(key *rsa.PrivateKey, signed bool) error {
	ns, err := newSigner(key)
	if err != nil {
		return fmt.Errorf("testproject: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sign == nil {
		return fmt.Errorf("testproject: RotateKey on an unsigned server")
	}
	roll := ""
	if signed {
		if roll, err = s.sign.signMD5Hex([]byte(strings.TrimSpace(ns.keyText))); err != nil {
			return fmt.Errorf("testproject: signing the new key: %w", err)
		}
	}
	apps := make([]*appState, 0, len(s.apps))
	for _, a := range s.apps {
		st, err := loadApp(a.App, ns)
		if err != nil {
			return fmt.Errorf("testproject: %w", err)
		}
		apps = append(apps, st)
	}
	s.sign, s.rollSig, s.apps, s.rotated = ns, roll, apps, true
	return nil
}
