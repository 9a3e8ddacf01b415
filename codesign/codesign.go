// Package codesign implements BOINC's code-signing scheme (lib/crypt.cpp):
// the text form of a project's RSA public key, and file signatures that are
// PKCS#1 v1.5 type-1 signatures over the file's lower-case hex MD5, without
// a DigestInfo. Projects sign their executables offline; a client that
// checks the signature cannot be made to run a binary the project did not
// sign, even by someone who controls the download server.
package codesign

import (
	"crypto"
	"crypto/md5"
	"crypto/rand"
	"crypto/rsa"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/big"
	"os"
	"strconv"
	"strings"
)

// fieldLen is MAX_RSA_MODULUS_LEN: modulus and exponent are each stored
// left-padded to 128 bytes, so keys are limited to 1024 bits.
const fieldLen = 128

const hexLineBytes = 32

// ErrNoSignature: a signature was required but the file has none.
var ErrNoSignature = errors.New("file has no signature")

// ParsePublicKey reads the <code_sign_key> text: the bit count, then hex
// lines of modulus and exponent, ending with a "." line.
func ParsePublicKey(text string) (*rsa.PublicKey, error) {
	text = strings.TrimSpace(text)
	first, rest, ok := strings.Cut(text, "\n")
	if !ok {
		return nil, errors.New("code sign key: no key bytes after the bit count")
	}
	bits, err := strconv.Atoi(strings.TrimSpace(first))
	if err != nil || bits <= 0 || bits > 8*fieldLen {
		return nil, fmt.Errorf("code sign key: bad bit count %q", first)
	}
	b, err := ParseHexLines(rest)
	if err != nil {
		return nil, fmt.Errorf("code sign key: %w", err)
	}
	if len(b) != 2*fieldLen {
		return nil, fmt.Errorf("code sign key: %d bytes, want %d", len(b), 2*fieldLen)
	}
	n := new(big.Int).SetBytes(b[:fieldLen])
	e := new(big.Int).SetBytes(b[fieldLen:])
	if n.BitLen() < 512 {
		return nil, fmt.Errorf("code sign key: modulus of %d bits is too short", n.BitLen())
	}
	if !e.IsInt64() || e.Int64() < 3 || e.Int64() > 1<<31-1 {
		return nil, fmt.Errorf("code sign key: bad exponent %s", e)
	}
	return &rsa.PublicKey{N: n, E: int(e.Int64())}, nil
}

// FormatPublicKey writes a key in the text form ParsePublicKey reads.
func FormatPublicKey(pub *rsa.PublicKey) string {
	buf := make([]byte, 2*fieldLen)
	pub.N.FillBytes(buf[:fieldLen])
	big.NewInt(int64(pub.E)).FillBytes(buf[fieldLen:])
	return strconv.Itoa(pub.N.BitLen()) + "\n" + HexLines(buf)
}

// SignMD5Hex signs a lower-case hex MD5 string (as a project's signing
// tool does) and returns the signature's text form.
func SignMD5Hex(key *rsa.PrivateKey, md5hex string) (string, error) {
	sig, err := rsa.SignPKCS1v15(rand.Reader, key, crypto.Hash(0), []byte(md5hex))
	if err != nil {
		return "", fmt.Errorf("signing md5: %w", err)
	}
	return HexLines(sig), nil
}

// VerifyMD5Hex checks a signature text against a hex MD5.
func VerifyMD5Hex(pub *rsa.PublicKey, md5hex, sigText string) error {
	if strings.TrimSpace(sigText) == "" {
		return ErrNoSignature
	}
	sig, err := ParseHexLines(sigText)
	if err != nil {
		return fmt.Errorf("signature: %w", err)
	}
	if err := rsa.VerifyPKCS1v15(pub, crypto.Hash(0), []byte(md5hex), sig); err != nil {
		return fmt.Errorf("signature does not match the file: %w", err)
	}
	return nil
}

// VerifyFile checks path's signature with the project key text.
func VerifyFile(path, keyText, sigText string) error {
	if strings.TrimSpace(sigText) == "" {
		return ErrNoSignature
	}
	pub, err := ParsePublicKey(keyText)
	if err != nil {
		return err
	}
	sum, err := FileMD5(path)
	if err != nil {
		return err
	}
	return VerifyMD5Hex(pub, sum, sigText)
}

// FileMD5 is the lower-case hex MD5 of a file.
func FileMD5(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := md5.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("reading %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// HexLines writes bytes as BOINC does: hex, 32 bytes per line, "." line.
func HexLines(b []byte) string {
	var sb strings.Builder
	for i := 0; i < len(b); i += hexLineBytes {
		end := min(i+hexLineBytes, len(b))
		sb.WriteString(hex.EncodeToString(b[i:end]))
		sb.WriteByte('\n')
	}
	sb.WriteString(".\n")
	return sb.String()
}

// ParseHexLines reads hex digits up to the terminating "." (whitespace is
// ignored, as lib/crypt.cpp sscan_hex_data does).
func ParseHexLines(text string) ([]byte, error) {
	body, _, found := strings.Cut(text, ".")
	if !found {
		return nil, errors.New("hex data has no terminating '.'")
	}
	b, err := hex.DecodeString(strings.Join(strings.Fields(body), ""))
	if err != nil {
		return nil, fmt.Errorf("hex data: %w", err)
	}
	return b, nil
}
