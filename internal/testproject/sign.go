package testproject

import (
	"crypto"
	"crypto/md5"
	"crypto/rand"
	"crypto/rsa"
	"encoding/hex"
	"errors"
	"fmt"
	"math/big"
	"strconv"
	"strings"
)

// BOINC's crypto (lib/crypt.cpp) stores keys in fixed 128-byte fields, so
// the modulus can be at most 1024 bits.
const (
	signKeyBits  = 1024
	rsaFieldLen  = 128
	hexLineBytes = 32
)

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
	if bits := key.N.BitLen(); bits > 8*rsaFieldLen {
		return nil, fmt.Errorf("code-signing key has %d bits; BOINC keys have at most %d", bits, 8*rsaFieldLen)
	}
	if err := key.Validate(); err != nil {
		return nil, fmt.Errorf("code-signing key: %w", err)
	}
	return &signer{key: key, keyText: encodePublicKey(&key.PublicKey)}, nil
}

// encodePublicKey writes the key as lib/crypt.cpp print_key_hex does: the
// bit count, then modulus and exponent as 128-byte big-endian fields in
// hex, 32 bytes per line, then a "." line.
func encodePublicKey(pub *rsa.PublicKey) string {
	buf := make([]byte, 2*rsaFieldLen)
	pub.N.FillBytes(buf[:rsaFieldLen])
	big.NewInt(int64(pub.E)).FillBytes(buf[rsaFieldLen:])
	return strconv.Itoa(pub.N.BitLen()) + "\n" + hexLines(buf)
}

// decodePublicKey parses the text form written by encodePublicKey.
func decodePublicKey(text string) (*rsa.PublicKey, error) {
	text = strings.TrimSpace(text)
	first, rest, ok := strings.Cut(text, "\n")
	if !ok {
		return nil, errors.New("code sign key: no key bytes after the bit count")
	}
	bits, err := strconv.Atoi(strings.TrimSpace(first))
	if err != nil || bits <= 0 || bits > 8*rsaFieldLen {
		return nil, fmt.Errorf("code sign key: bad bit count %q", first)
	}
	b, err := parseHexLines(rest)
	if err != nil {
		return nil, fmt.Errorf("code sign key: %w", err)
	}
	if len(b) != 2*rsaFieldLen {
		return nil, fmt.Errorf("code sign key: %d bytes, want %d", len(b), 2*rsaFieldLen)
	}
	n := new(big.Int).SetBytes(b[:rsaFieldLen])
	e := new(big.Int).SetBytes(b[rsaFieldLen:])
	if !e.IsInt64() || e.Int64() < 3 || e.Int64() > 1<<31-1 {
		return nil, fmt.Errorf("code sign key: bad exponent %s", e)
	}
	return &rsa.PublicKey{N: n, E: int(e.Int64())}, nil
}

// signMD5Hex signs the lower-case hex MD5 of data the way BOINC does:
// PKCS#1 v1.5 type-1 padding around the 32 ASCII hex characters, no
// DigestInfo. The result is in BOINC's hex-lines text form.
func (s *signer) signMD5Hex(data []byte) (string, error) {
	sum := md5.Sum(data)
	sig, err := rsa.SignPKCS1v15(nil, s.key, crypto.Hash(0), []byte(hex.EncodeToString(sum[:])))
	if err != nil {
		return "", fmt.Errorf("signing md5: %w", err)
	}
	return hexLines(sig), nil
}

// verifyMD5Hex checks a signature made by signMD5Hex.
func verifyMD5Hex(pub *rsa.PublicKey, data []byte, sigText string) error {
	sig, err := parseHexLines(sigText)
	if err != nil {
		return fmt.Errorf("signature: %w", err)
	}
	sum := md5.Sum(data)
	if err := rsa.VerifyPKCS1v15(pub, crypto.Hash(0), []byte(hex.EncodeToString(sum[:])), sig); err != nil {
		return fmt.Errorf("signature does not match: %w", err)
	}
	return nil
}

// uploadSignedText is what an output file's <xml_signature> signs; the
// upload handler checks it against the name and max_nbytes the client
// echoes (sched/file_upload_handler.cpp).
func uploadSignedText(name string, maxNBytes float64) string {
	return fmt.Sprintf("<name>%s</name><max_nbytes>%.0f</max_nbytes>", name, maxNBytes)
}

func hexLines(b []byte) string {
	var sb strings.Builder
	for i := 0; i < len(b); i += hexLineBytes {
		end := min(i+hexLineBytes, len(b))
		sb.WriteString(hex.EncodeToString(b[i:end]))
		sb.WriteByte('\n')
	}
	sb.WriteString(".\n")
	return sb.String()
}

// parseHexLines reads hex digits up to the terminating "." (whitespace is
// ignored, as lib/crypt.cpp sscan_hex_data does).
func parseHexLines(text string) ([]byte, error) {
	body, _, found := strings.Cut(text, ".")
	if !found {
		return nil, errors.New("hex data has no terminating '.'")
	}
	clean := strings.Join(strings.Fields(body), "")
	b, err := hex.DecodeString(clean)
	if err != nil {
		return nil, fmt.Errorf("hex data: %w", err)
	}
	return b, nil
}
