//go:build windows

package winsvc

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/windows"
)

// LSA access rights (ntsecapi.h) needed to add an account right.
const (
	policyCreateAccount = 0x00000010
	policyLookupNames   = 0x00000800
)

// grantServiceLogonRight gives sid SeServiceLogonRight through the LSA
// policy (what secpol.msc's "Log on as a service" edits). x/sys has no
// wrappers for LsaOpenPolicy and LsaAddAccountRights, so they are called
// from advapi32 directly. Granting a right the account already has
// succeeds.
func grantServiceLogonRight(sid *windows.SID) error {
	advapi := windows.NewLazySystemDLL("advapi32.dll")
	openPolicy := advapi.NewProc("LsaOpenPolicy")
	addRights := advapi.NewProc("LsaAddAccountRights")
	closePolicy := advapi.NewProc("LsaClose")
	for _, p := range []*windows.LazyProc{openPolicy, addRights, closePolicy} {
		if err := p.Find(); err != nil {
			return fmt.Errorf("advapi32.dll: %w", err)
		}
	}
	// LSA_OBJECT_ATTRIBUTES has OBJECT_ATTRIBUTES' layout; LsaOpenPolicy
	// wants it zeroed apart from its length.
	var attrs windows.OBJECT_ATTRIBUTES
	attrs.Length = uint32(unsafe.Sizeof(attrs))
	var policy windows.Handle
	st, _, _ := openPolicy.Call(0, uintptr(unsafe.Pointer(&attrs)),
		policyCreateAccount|policyLookupNames, uintptr(unsafe.Pointer(&policy)))
	if st != 0 {
		return fmt.Errorf("LsaOpenPolicy: %w", windows.NTStatus(st))
	}
	defer closePolicy.Call(uintptr(policy))
	right, err := windows.NewNTUnicodeString("SeServiceLogonRight")
	if err != nil {
		return fmt.Errorf("SeServiceLogonRight: %w", err)
	}
	st, _, _ = addRights.Call(uintptr(policy), uintptr(unsafe.Pointer(sid)), uintptr(unsafe.Pointer(right)), 1)
	if st != 0 {
		return fmt.Errorf("LsaAddAccountRights: %w", windows.NTStatus(st))
	}
	return nil
}
