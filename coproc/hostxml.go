package coproc

import (
	"bufio"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"

	"github.com/boincd/boincd/boinc"
)

// HostInfoOptions are the parts of <host_info> that depend on where it is
// written or that boinc.Host does not carry.
type HostInfoOptions struct {
	// SuppressNetInfo leaves out domain_name and ip_addr (cc_config
	// <suppress_net_info>).
	SuppressNetInfo bool
	// VMExtensionsDisabled is p_vm_extensions_disabled: the CPU's
	// virtualisation extensions were found unusable.
	VMExtensionsDisabled bool
	// WSLAvailable is wsl_available (Windows only; 0 elsewhere).
	WSLAvailable bool
	// ProductName, MACAddress and VirtualBoxVersion are written only when
	// set, as the C++ client does.
	ProductName       string
	MACAddress        string
	VirtualBoxVersion string
	// IncludeCoprocs writes a <coprocs> block inside host_info, as
	// client_state.xml does; scheduler requests put coprocs at top level
	// instead (PROTOCOLS.md §1.3 #20). CoprocsXML is its content: one
	// complete element per GPU type, each line ending in "\n".
	IncludeCoprocs bool
	CoprocsXML     string
}

// WriteHostInfo writes <host_info> byte for byte as the C++ client's
// HOST_INFO::write (lib/hostinfo.cpp) does for the same values: fixed
// four-space indentation, "%f" for every double, strings through
// xml_escape.
func WriteHostInfo(w io.Writer, h boinc.Host, opts HostInfoOptions) error {
	b := make([]byte, 0, 2048)
	b = append(b, "<host_info>\n"...)
	b = elemInt(b, "timezone", int64(h.Timezone))
	if !opts.SuppressNetInfo {
		b = elemStr(b, "domain_name", h.DomainName)
		b = elemStr(b, "ip_addr", h.IPAddr)
	}
	b = elemStr(b, "host_cpid", h.HostCPID)
	b = elemInt(b, "p_ncpus", int64(h.PNCPUs))
	b = elemStr(b, "p_vendor", h.PVendor)
	b = elemStr(b, "p_model", h.PModel)
	b = elemStr(b, "p_features", h.PFeatures)
	b = elemFloat(b, "p_fpops", h.PFpops)
	b = elemFloat(b, "p_iops", h.PIops)
	b = elemFloat(b, "p_membw", h.PMembw)
	b = elemFloat(b, "p_calculated", h.PCalculated)
	b = elemInt(b, "p_vm_extensions_disabled", b2i(opts.VMExtensionsDisabled))
	b = elemFloat(b, "m_nbytes", h.MNBytes)
	b = elemFloat(b, "m_cache", h.MCache)
	b = elemFloat(b, "m_swap", h.MSwap)
	b = elemFloat(b, "d_total", h.DTotal)
	b = elemFloat(b, "d_free", h.DFree)
	b = elemStr(b, "os_name", h.OSName)
	b = elemStr(b, "os_version", h.OSVersion)
	b = elemInt(b, "n_usable_coprocs", int64(h.NUsableCoprocs))
	b = elemInt(b, "wsl_available", b2i(opts.WSLAvailable))
	if h.DockerVersion != "" {
		// Both or neither, as HOST_INFO::write.
		b = elemStr(b, "docker_version", h.DockerVersion)
		b = elemInt(b, "docker_type", int64(h.DockerType))
	}
	if opts.ProductName != "" {
		b = elemStr(b, "product_name", opts.ProductName)
	}
	if opts.MACAddress != "" {
		b = elemStr(b, "mac_address", opts.MACAddress)
	}
	if opts.VirtualBoxVersion != "" {
		b = elemStr(b, "virtualbox_version", opts.VirtualBoxVersion)
	}
	if opts.IncludeCoprocs {
		b = append(b, "    <coprocs>\n"...)
		b = append(b, opts.CoprocsXML...)
		b = append(b, "    </coprocs>\n"...)
	}
	b = append(b, "</host_info>\n"...)
	if _, err := w.Write(b); err != nil {
		return fmt.Errorf("writing host_info: %w", err)
	}
	return nil
}

func b2i(v bool) int64 {
	if v {
		return 1
	}
	return 0
}

func elemOpen(b []byte, tag string) []byte {
	b = append(b, "    <"...)
	b = append(b, tag...)
	return append(b, '>')
}

func elemClose(b []byte, tag string) []byte {
	b = append(b, "</"...)
	b = append(b, tag...)
	return append(b, ">\n"...)
}

func elemInt(b []byte, tag string, v int64) []byte {
	return elemClose(strconv.AppendInt(elemOpen(b, tag), v, 10), tag)
}

// elemFloat is C's "%f". NaN and infinities, which the C library would
// print as "nan"/"inf" and servers would misparse, go out as 0.
func elemFloat(b []byte, tag string, v float64) []byte {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		v = 0
	}
	return elemClose(strconv.AppendFloat(elemOpen(b, tag), v, 'f', 6, 64), tag)
}

func elemStr(b []byte, tag, v string) []byte {
	return elemClose(xmlEscape(elemOpen(b, tag), v), tag)
}

// xmlEscape is BOINC's xml_escape (lib/str_util.cpp): '<' and '&' become
// entities, bytes above 127 and tab/newline/CR become numeric references,
// other control bytes are dropped; '>' and quotes pass through.
func xmlEscape(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '<':
			b = append(b, "&lt;"...)
		case c == '&':
			b = append(b, "&amp;"...)
		case c > 127, c == '\t', c == '\n', c == '\r':
			b = append(b, "&#"...)
			b = strconv.AppendInt(b, int64(c), 10)
			b = append(b, ';')
		case c < 32:
		default:
			b = append(b, c)
		}
	}
	return b
}

// hostInfoXML is <host_info> as read back; unknown children are skipped.
type hostInfoXML struct {
	Timezone       int     `xml:"timezone"`
	DomainName     *string `xml:"domain_name"`
	IPAddr         *string `xml:"ip_addr"`
	HostCPID       string  `xml:"host_cpid"`
	PNCPUs         int     `xml:"p_ncpus"`
	PVendor        string  `xml:"p_vendor"`
	PModel         string  `xml:"p_model"`
	PFeatures      string  `xml:"p_features"`
	PFpops         float64 `xml:"p_fpops"`
	PIops          float64 `xml:"p_iops"`
	PMembw         float64 `xml:"p_membw"`
	PCalculated    float64 `xml:"p_calculated"`
	VMExtDisabled  int     `xml:"p_vm_extensions_disabled"`
	MNBytes        float64 `xml:"m_nbytes"`
	MCache         float64 `xml:"m_cache"`
	MSwap          float64 `xml:"m_swap"`
	DTotal         float64 `xml:"d_total"`
	DFree          float64 `xml:"d_free"`
	OSName         string  `xml:"os_name"`
	OSVersion      string  `xml:"os_version"`
	NUsableCoprocs int     `xml:"n_usable_coprocs"`
	WSLAvailable   int     `xml:"wsl_available"`
	ProductName    string  `xml:"product_name"`
	MACAddress     string  `xml:"mac_address"`
	VBoxVersion    string  `xml:"virtualbox_version"`
	DockerVersion  string  `xml:"docker_version"`
	DockerType     int     `xml:"docker_type"`
	Coprocs        *struct {
		Inner []byte `xml:",innerxml"`
	} `xml:"coprocs"`
}

// maxHostInfoBytes bounds what ParseHostInfo reads: a real host_info is a
// few KB even with many GPUs.
const maxHostInfoBytes = 1 << 20

// ParseHostInfo reads the first <host_info> element in r (a scheduler
// request, client_state.xml, a GUI RPC reply or the bare element) into a
// boinc.Host and the options that would write it back the same way.
func ParseHostInfo(r io.Reader) (boinc.Host, HostInfoOptions, error) {
	lr := &io.LimitedReader{R: r, N: maxHostInfoBytes + 1}
	dec := xml.NewDecoder(bufio.NewReader(lr))
	dec.Strict = false
	for {
		tok, err := dec.Token()
		if err != nil {
			if lr.N <= 0 {
				return boinc.Host{}, HostInfoOptions{}, fmt.Errorf("parsing host_info: input over %d bytes", maxHostInfoBytes)
			}
			if errors.Is(err, io.EOF) {
				return boinc.Host{}, HostInfoOptions{}, errors.New("parsing host_info: no <host_info> element")
			}
			return boinc.Host{}, HostInfoOptions{}, fmt.Errorf("parsing host_info: %w", err)
		}
		se, ok := tok.(xml.StartElement)
		if !ok || se.Name.Local != "host_info" {
			continue
		}
		var x hostInfoXML
		if err := dec.DecodeElement(&x, &se); err != nil {
			return boinc.Host{}, HostInfoOptions{}, fmt.Errorf("parsing host_info: %w", err)
		}
		h := boinc.Host{
			Timezone: x.Timezone, HostCPID: x.HostCPID,
			PNCPUs: x.PNCPUs, PVendor: x.PVendor, PModel: x.PModel, PFeatures: x.PFeatures,
			PFpops: x.PFpops, PIops: x.PIops, PMembw: x.PMembw, PCalculated: x.PCalculated,
			MNBytes: x.MNBytes, MCache: x.MCache, MSwap: x.MSwap, DTotal: x.DTotal, DFree: x.DFree,
			OSName: x.OSName, OSVersion: x.OSVersion, NUsableCoprocs: x.NUsableCoprocs,
			DockerVersion: x.DockerVersion, DockerType: x.DockerType,
		}
		if x.DomainName != nil {
			h.DomainName = *x.DomainName
		}
		if x.IPAddr != nil {
			h.IPAddr = *x.IPAddr
		}
		opts := HostInfoOptions{
			SuppressNetInfo:      x.DomainName == nil && x.IPAddr == nil,
			VMExtensionsDisabled: x.VMExtDisabled != 0,
			WSLAvailable:         x.WSLAvailable != 0,
			ProductName:          x.ProductName,
			MACAddress:           x.MACAddress,
			VirtualBoxVersion:    x.VBoxVersion,
		}
		if x.Coprocs != nil {
			opts.IncludeCoprocs = true
			opts.CoprocsXML = trimToLines(string(x.Coprocs.Inner))
		}
		return h, opts, nil
	}
}

// trimToLines drops the newline right after <coprocs> and the indentation
// before </coprocs>, which WriteHostInfo writes itself.
func trimToLines(s string) string {
	if len(s) > 0 && s[0] == '\n' {
		s = s[1:]
	}
	for len(s) > 0 && s[len(s)-1] == ' ' {
		s = s[:len(s)-1]
	}
	return s
}
