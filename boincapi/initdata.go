package boincapi

import (
	"encoding/xml"
	"fmt"
	"io"
	"os"
)

// InitDataFileName is the file the client writes into the slot.
const InitDataFileName = "init_data.xml"

// maxInitDataSize bounds what we read: a real init_data.xml is a few KB,
// project preferences included.
const maxInitDataSize = 4 << 20

// InitData is the part of init_data.xml (lib/app_ipc.cpp APP_INIT_DATA)
// an app may want. Unknown elements are ignored.
type InitData struct {
	MajorVersion          int      `xml:"major_version"`
	MinorVersion          int      `xml:"minor_version"`
	Release               int      `xml:"release"`
	AppVersion            int      `xml:"app_version"`
	UserID                int64    `xml:"userid"`
	TeamID                int64    `xml:"teamid"`
	HostID                int64    `xml:"hostid"`
	AppName               string   `xml:"app_name"`
	PlanClass             string   `xml:"plan_class"`
	ProjectPreferences    InnerXML `xml:"project_preferences"`
	TeamName              string   `xml:"team_name"`
	UserName              string   `xml:"user_name"`
	ProjectDir            string   `xml:"project_dir"`
	BoincDir              string   `xml:"boinc_dir"`
	Authenticator         string   `xml:"authenticator"`
	WUName                string   `xml:"wu_name"`
	ResultName            string   `xml:"result_name"`
	ShmKey                int64    `xml:"shm_key"`
	Slot                  int      `xml:"slot"`
	ClientPID             int      `xml:"client_pid"`
	WUCPUTime             float64  `xml:"wu_cpu_time"`
	StartingElapsedTime   float64  `xml:"starting_elapsed_time"`
	UsingSandbox          int      `xml:"using_sandbox"`
	UserTotalCredit       float64  `xml:"user_total_credit"`
	UserExpavgCredit      float64  `xml:"user_expavg_credit"`
	HostTotalCredit       float64  `xml:"host_total_credit"`
	HostExpavgCredit      float64  `xml:"host_expavg_credit"`
	ResourceShareFraction float64  `xml:"resource_share_fraction"`
	CheckpointPeriod      float64  `xml:"checkpoint_period"`
	FractionDoneStart     float64  `xml:"fraction_done_start"`
	FractionDoneEnd       float64  `xml:"fraction_done_end"`
	GPUType               string   `xml:"gpu_type"`
	GPUDeviceNum          int      `xml:"gpu_device_num"`
	GPUOpenCLDevIndex     int      `xml:"gpu_opencl_dev_index"`
	GPUUsage              float64  `xml:"gpu_usage"`
	NCPUs                 float64  `xml:"ncpus"`
	RscFpopsEst           float64  `xml:"rsc_fpops_est"`
	RscFpopsBound         float64  `xml:"rsc_fpops_bound"`
	RscMemoryBound        float64  `xml:"rsc_memory_bound"`
	RscDiskBound          float64  `xml:"rsc_disk_bound"`
	ComputationDeadline   float64  `xml:"computation_deadline"`
	Host                  InitHost `xml:"host_info"`
	AppFiles              []string `xml:"app_file"`
	GlobalPreferences     InnerXML `xml:"global_preferences"`
	ProxyInfo             InnerXML `xml:"proxy_info"`
	XMLName               xml.Name `xml:"app_init_data"`
}

// InnerXML keeps an element's raw content.
type InnerXML struct {
	Inner string `xml:",innerxml"`
}

// InitHost is the host_info subset apps use.
type InitHost struct {
	PNCPUs    int     `xml:"p_ncpus"`
	PVendor   string  `xml:"p_vendor"`
	PModel    string  `xml:"p_model"`
	PFpops    float64 `xml:"p_fpops"`
	PIops     float64 `xml:"p_iops"`
	MNBytes   float64 `xml:"m_nbytes"`
	OSName    string  `xml:"os_name"`
	OSVersion string  `xml:"os_version"`
}

// ParseInitData parses an init_data.xml document.
func ParseInitData(r io.Reader) (*InitData, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxInitDataSize+1))
	if err != nil {
		return nil, fmt.Errorf("init_data.xml: read: %w", err)
	}
	if len(b) > maxInitDataSize {
		return nil, fmt.Errorf("init_data.xml: larger than %d bytes", maxInitDataSize)
	}
	d := &InitData{FractionDoneEnd: 1, GPUDeviceNum: -1, GPUOpenCLDevIndex: -1}
	if err := xml.Unmarshal(b, d); err != nil {
		return nil, fmt.Errorf("init_data.xml: %w", err)
	}
	// Written so that NaN (which compares false) also falls back.
	if !(d.FractionDoneStart >= 0 && d.FractionDoneStart < d.FractionDoneEnd && d.FractionDoneEnd <= 1) {
		d.FractionDoneStart, d.FractionDoneEnd = 0, 1
	}
	return d, nil
}

// ReadInitData parses the init_data.xml file at path.
func ReadInitData(path string) (*InitData, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("init_data.xml: %w", err)
	}
	defer f.Close()
	d, err := ParseInitData(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return d, nil
}
