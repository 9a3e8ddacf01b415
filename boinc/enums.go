package boinc

// Client version boincd claims on the wire. Servers gate features on
// major*10000+minor*100+release (PROTOCOLS.md §1.3); 7.20.5 is what the
// captured reference client sends, so the servers we are tested against
// treat us exactly like it.
const (
	ClientMajor   = 7
	ClientMinor   = 20
	ClientRelease = 5
)

// The platforms (primary first) are detected at run time: package
// platform.

// RPCReason says why a scheduler RPC is made (lib/common_defs.h).
type RPCReason int

const (
	RPCNone       RPCReason = 0
	RPCUserReq    RPCReason = 1
	RPCResultsDue RPCReason = 2
	RPCNeedWork   RPCReason = 3
	RPCTrickleUp  RPCReason = 4
	RPCAcctMgrReq RPCReason = 5
	RPCInit       RPCReason = 6
	RPCProjectReq RPCReason = 7
)

func (r RPCReason) String() string {
	switch r {
	case RPCUserReq:
		return "Requested by user"
	case RPCResultsDue:
		return "To report completed tasks"
	case RPCNeedWork:
		return "To fetch work"
	case RPCTrickleUp:
		return "To send trickle-up message"
	case RPCAcctMgrReq:
		return "Requested by account manager"
	case RPCInit:
		return "Project initialization"
	case RPCProjectReq:
		return "Requested by project"
	}
	return "none"
}

// File status values (FILE_INFO::status); negative values are error codes.
const (
	FileNotPresent    = 0
	FilePresent       = 1
	FileVerifyPending = 2
)

// Exit codes and error numbers from lib/error_numbers.h that boincd reports.
const (
	ExitAbortedByClient   = 194
	ExitDiskLimitExceeded = 196
	ExitTimeLimitExceeded = 197
	ExitMemLimitExceeded  = 198
	ExitAbortedByProject  = 202
	ExitAbortedViaGUI     = 203
	ExitUnknown           = 204

	ErrXMLParse        = -112
	ErrMD5Failed       = -119
	ErrRSAFailed       = -120
	ErrNoSignature     = -123
	ErrUploadTransient = -127
	ErrUploadPermanent = -128
	ErrFileTooBig      = -131
	ErrResultStart     = -185
	ErrResultDownload  = -186
	ErrResultUpload    = -187
	ErrTimeout         = -182
	ErrHTTPTransient   = -184
	ErrHTTPPermanent   = -224
	ErrFileWrongSize   = -221
	ErrTooManyExits    = -226
	ErrFileMissing     = -161
	ErrAbortedOnExit   = -225
	ErrAbortedViaGUI   = -197
)

// DockerType is the container engine kind, as <docker_type> carries it
// in host_info (the C++ client's DOCKER_TYPE).
type DockerType int

// The container engine kinds.
const (
	DockerNone DockerType = 0
	Docker     DockerType = 1
	Podman     DockerType = 2
)

func (t DockerType) String() string {
	switch t {
	case Docker:
		return "docker"
	case Podman:
		return "podman"
	}
	return "none"
}
