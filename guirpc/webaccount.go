package guirpc

import (
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/boincd/boincd/boinc"
)

// The Add Project wizard's account step for callers in this process
// (the web dashboard): the same WebRPC the lookup_account and
// create_account ops hand the Backend, and the same reading of the
// project's reply their polls write, so that there is one implementation.

// PasswdHash is what a BOINC GUI sends for an account's password:
// md5(password + lower-case email) in hex (lib/gui_rpc_client_ops.cpp
// RPC_CLIENT::lookup_account, ACCOUNT_IN).
func PasswdHash(password, email string) string {
	sum := md5.Sum([]byte(password + strings.ToLower(email)))
	return hex.EncodeToString(sum[:])
}

// AccountWebRPC is the WebRPC of kind WebRPCLookupAccount or
// WebRPCCreateAccount for a project's master URL, as opLookupAccount and
// opCreateAccount build it (without consent to terms: client is then
// not needed). userName is create_account's alone.
func AccountWebRPC(kind, url, email, passwdHash, userName string) (WebRPC, error) {
	if kind != WebRPCLookupAccount && kind != WebRPCCreateAccount {
		return WebRPC{}, fmt.Errorf("not an account web RPC: %q", kind)
	}
	if url == "" || email == "" || passwdHash == "" {
		return WebRPC{}, errors.New("missing URL, email address, or password")
	}
	u, err := boinc.CanonicalMasterURL(url)
	if err != nil || strings.ContainsAny(u, "?#") {
		return WebRPC{}, fmt.Errorf("invalid URL: %s", url)
	}
	ai := accountIn{url: u, email: email, passwdHash: passwdHash, userName: userName}
	a := WebRPC{Kind: kind, Endpoint: u + kind + ".php", Query: lookupQuery(ai)}
	if kind == WebRPCCreateAccount {
		a.Query = createQuery(ai, "")
	}
	return a, nil
}

// AccountResult is where a lookup_account or create_account stands, as
// its poll op reports it (ACCOUNT_OUT).
type AccountResult struct {
	// Started: such a request was made since the client started.
	Started bool
	// InProgress: it is still under way (ERR_IN_PROGRESS).
	InProgress bool
	// Authenticator is the account key, when the project gave one.
	Authenticator string
	// ErrorNum is the failure's BOINC error number, with the project's
	// words in ErrorMsg when it sent some.
	ErrorNum int
	ErrorMsg string
}

// AccountResultOf reads a WebRPCStatus as lookup_account_poll and
// create_account_poll do.
func AccountResultOf(st WebRPCStatus) AccountResult {
	r := AccountResult{Started: st.Started}
	var ao accountOut
	switch {
	case !st.Started:
		return r
	case !st.Done:
		ao.errNum = ErrNumInProgress
	case st.ErrorNum != 0:
		ao.errNum = st.ErrorNum
	default:
		ao = parseAccountReply(st.Reply)
	}
	r.InProgress = ao.errNum == ErrNumInProgress
	r.Authenticator, r.ErrorNum, r.ErrorMsg = ao.auth, ao.errNum, ao.errMsg
	return r
}
