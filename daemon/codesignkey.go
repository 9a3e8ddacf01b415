package daemon

import (
	"crypto/md5"
	"encoding/hex"
	"log/slog"
	"strings"

	"github.com/boincd/boincd/boinc"
	"github.com/boincd/boincd/codesign"
	"github.com/boincd/boincd/rpcclient"
)

// applyCodeSignKey learns the project's code-signing key at first contact
// and never lets a server replace it silently: a different key is taken
// only with a <code_sign_key_signature> of it made with the key we hold
// (BOINC's key rollover, PROTOCOLS.md §2.6), else it is refused and the
// old key stays, so app files signed with the new key are rejected. A
// volunteer who trusts the change resets the project.
func (d *Daemon) applyCodeSignKey(p *boinc.Project, rep *rpcclient.SchedulerReply) {
	key := strings.TrimSpace(rep.CodeSignKey)
	switch {
	case key == "":
		return
	case p.CodeSignKey == "":
		if _, err := codesign.ParsePublicKey(key); err != nil {
			d.projectLog(p).Error("project sent a code-signing key that cannot be parsed; app files will not verify", slog.Any("err", err))
		}
		p.CodeSignKey = key
		return
	case sameKey(p.CodeSignKey, key):
		return
	}
	log := d.projectLog(p)
	if rep.CodeSignKeySignature == "" {
		log.Error("project sent a different code-signing key without a signature by the key we hold: keeping the old key (reset the project to accept a new one)")
		return
	}
	old, err := codesign.ParsePublicKey(p.CodeSignKey)
	if err == nil {
		sum := md5.Sum([]byte(key))
		err = codesign.VerifyMD5Hex(old, hex.EncodeToString(sum[:]), rep.CodeSignKeySignature)
	}
	if err != nil {
		log.Error("project sent a new code-signing key whose signature does not verify with the key we hold: keeping the old key", slog.Any("err", err))
		return
	}
	if _, err := codesign.ParsePublicKey(key); err != nil {
		log.Error("project's new code-signing key is signed but cannot be parsed: keeping the old key", slog.Any("err", err))
		return
	}
	p.CodeSignKey = key
	log.Warn("code-signing key changed: the new key is signed by the old one")
}

// sameKey compares key texts ignoring line breaks and spacing, which
// servers and files vary.
func sameKey(a, b string) bool {
	return strings.Join(strings.Fields(a), "") == strings.Join(strings.Fields(b), "")
}
