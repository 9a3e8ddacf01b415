package ccconfig

import (
	"errors"
	"fmt"
	"strings"

	"github.com/boincd/boincd/boinc"
)

// AppInfo is a project's app_info.xml: the apps, files and app versions a
// volunteer runs instead of the project's own ("anonymous platform"). The
// C++ client reads it in CLIENT_STATE::parse_app_info (cs_statefile.cpp).
type AppInfo struct {
	Apps     []boinc.App
	Files    []AppInfoFile
	Versions []AppInfoVersion
}

// AppInfoFile is one <file_info> (or <file>): a file the volunteer put in
// the project directory. NBytes is its size on disk.
type AppInfoFile struct {
	Name       string
	Executable bool
	NBytes     int64
	Line       int
}

// AppInfoVersion is one <app_version>, its files linked to Files.
type AppInfoVersion struct {
	boinc.AppVersion
	Line int
}

// StatFunc reports the size of a file in the project directory, or why
// it cannot be used (missing, not a regular file).
type StatFunc func(name string) (int64, error)

// ParseAppInfo reads app_info.xml and links it as the C++ client does
// (parse_app_info, link_file_info, link_app_version): a file must exist
// in the project directory (stat says so) and may not name a URL, an app
// version must name a listed app and only listed files, and the first of
// duplicates counts. Like ParseApp it never fails: an entry that cannot
// be used is a problem naming the file and line, and the rest applies.
// File and app names follow the rules for names from a project server
// (boinc.ValidateFileName): no path separator, no "..".
func ParseAppInfo(file string, data []byte, stat StatFunc) (AppInfo, []Problem) {
	var ai AppInfo
	root, probs := parseTree(file, data)
	if root == nil {
		return ai, probs
	}
	var top *node
	for _, c := range root.children {
		if c.name == "app_info" {
			top = c
			break
		}
	}
	if top == nil {
		if len(probs) == 0 {
			probs = append(probs, Problem{File: file, Msg: "no <app_info> element"})
		}
		return ai, probs
	}
	bad := func(n *node, err error, format string, args ...any) {
		probs = append(probs, Problem{File: file, Line: problemLine(err, n.line), Msg: fmt.Sprintf(format, args...)})
	}
	// Files and apps first, wherever they stand: versions refer to them.
	files := map[string]bool{}
	apps := map[string]bool{}
	for _, n := range top.children {
		switch n.name {
		case "file_info", "file":
			f, err := parseAppInfoFile(file, n, &probs)
			if err == nil && files[f.Name] {
				err = fmt.Errorf("file %q is listed twice; the first entry counts", f.Name)
			}
			if err == nil {
				var size int64
				if size, err = stat(f.Name); err != nil {
					// The C++ client's words (parse_app_info).
					//lint:ignore ST1005 quoted from the C++ client
					err = fmt.Errorf("File referenced in app_info.xml does not exist: %s (%w)", f.Name, err)

				}
				f.NBytes = size
			}
			if err != nil {
				bad(n, err, "<%s>: %v; entry ignored", n.name, err)
				continue
			}
			files[f.Name] = true
			ai.Files = append(ai.Files, f)
		case "app":
			a, err := parseAppInfoApp(file, n, &probs)
			if err == nil && apps[a.Name] {
				err = fmt.Errorf("app %q is listed twice; the first entry counts", a.Name)
			}
			if err != nil {
				bad(n, err, "<app>: %v; entry ignored", err)
				continue
			}
			apps[a.Name] = true
			ai.Apps = append(ai.Apps, a)
		case "app_version":
		default:
			bad(n, nil, "unknown element <%s> in <app_info>; ignored", n.name)
		}
	}
	versions := map[string]bool{}
	for _, n := range top.children {
		if n.name != "app_version" {
			continue
		}
		v, err := parseAppInfoVersion(file, n, &probs)
		if err == nil && !apps[v.AppName] {
			err = fmt.Errorf("app %q is not listed in an <app> entry", v.AppName)
		}
		if err == nil {
			for _, ref := range v.FileRefs {
				if !files[ref.FileName] {
					err = fmt.Errorf("file %q is not listed (or not usable) in a <file_info> entry", ref.FileName)
					break
				}
			}
		}
		if err == nil {
			if _, ok := v.MainProgram(); !ok {
				err = errors.New("no <file_ref> is its <main_program/>")
			}
		}
		if err == nil {
			k := boinc.AppVersionKey("", v.AppName, v.Platform, v.PlanClass, v.VersionNum)
			if versions[k] {
				err = fmt.Errorf("duplicate app version %s %s %d %s; the first entry counts", v.AppName, v.Platform, v.VersionNum, v.PlanClass)
			}
			versions[k] = true
		}
		if err != nil {
			bad(n, err, "<app_version>: %v; entry ignored", err)
			continue
		}
		ai.Versions = append(ai.Versions, AppInfoVersion{AppVersion: v, Line: n.line})
	}
	return ai, probs
}

// parseAppInfoFile is FILE_INFO::parse for app_info.xml: a URL is refused
// ("Can't specify URLs in app_info.xml"); sizes and checksums are not
// used (the file is what is on disk).
func parseAppInfoFile(file string, n *node, probs *[]Problem) (AppInfoFile, error) {
	f := AppInfoFile{Line: n.line}
	at := n
	for _, c := range n.children {
		switch c.name {
		case "name":
			f.Name, at = c.str(), c
		case "executable":
			f.Executable = c.flag(file, probs)
		case "url", "download_url", "upload_url", "gzipped_url":
			return f, atLine(c, "Can't specify URLs in app_info.xml")
		case "nbytes", "md5_cksum", "max_nbytes", "sticky", "file_signature", "signature_required", "status":
			// What the project would say; the file on disk is what counts.
		default:
			unknownElement(file, c, n.name, probs)
		}
	}
	if f.Name == "" {
		return f, errors.New("no <name>")
	}
	if err := boinc.ValidateFileName(f.Name, false); err != nil {
		return f, atLine(at, "name: %w", err)
	}
	return f, nil
}

func parseAppInfoApp(file string, n *node, probs *[]Problem) (boinc.App, error) {
	var a boinc.App
	at := n
	for _, c := range n.children {
		switch c.name {
		case "name":
			a.Name, at = c.str(), c
		case "user_friendly_name":
			a.UserFriendlyName = c.str()
		case "non_cpu_intensive":
			a.NonCPUIntensive = c.flag(file, probs)
		case "fraction_done_exact", "sporadic":
		default:
			unknownElement(file, c, "app", probs)
		}
	}
	if a.Name == "" {
		return a, errors.New("no <name>")
	}
	if err := boinc.ValidateFileName(a.Name, false); err != nil {
		return a, atLine(at, "name: %w", err)
	}
	return a, nil
}

// unknownElement notes an element app_info.xml's reader skips, at its line.
func unknownElement(file string, c *node, parent string, probs *[]Problem) {
	*probs = append(*probs, Problem{File: file, Line: c.line, Msg: fmt.Sprintf("unknown element <%s> in <%s>; ignored", c.name, parent)})
}

// lineError is an entry's error at the line of the element at fault, so
// the problem points at <name>../x</name>, not at the entry's start.
type lineError struct {
	line int
	err  error
}

func (e *lineError) Error() string { return e.err.Error() }
func (e *lineError) Unwrap() error { return e.err }

func atLine(n *node, format string, args ...any) error {
	return &lineError{line: n.line, err: fmt.Errorf(format, args...)}
}

// problemLine is the line of err's element, or def.
func problemLine(err error, def int) int {
	var le *lineError
	if errors.As(err, &le) && le.line > 0 {
		return le.line
	}
	return def
}

// Bounds on app_info.xml numbers, as the scheduler reply parser's.
const (
	maxAppInfoNCPUs = 1 << 16
	maxAppInfoGPUs  = 1 << 10
)

// parseAppInfoVersion is APP_VERSION::parse: the platform defaults to the
// primary one, avg_ncpus to 1; a bad number fails the entry (the C++
// client would read it as 0 and run something the volunteer did not ask
// for).
func parseAppInfoVersion(file string, n *node, probs *[]Problem) (boinc.AppVersion, error) {
	var v boinc.AppVersion
	at := map[string]*node{}
	numErr := func(c *node, what string) error {
		return atLine(c, "<%s>%s</%s>: not %s", c.name, c.str(), c.name, what)
	}
	for _, c := range n.children {
		var discard []Problem
		at[c.name] = c
		switch c.name {
		case "app_name":
			v.AppName = c.str()
		case "version_num":
			x, ok := c.int(file, &discard)
			if !ok {
				return v, numErr(c, "a whole number")
			}
			v.VersionNum = x
		case "platform":
			v.Platform = c.str()
		case "plan_class":
			v.PlanClass = c.str()
		case "api_version":
			v.APIVersion = c.str()
		case "avg_ncpus":
			x, ok := c.float(file, &discard)
			if !ok || x < 0 || x > maxAppInfoNCPUs {
				return v, numErr(c, fmt.Sprintf("a number from 0 to %d", maxAppInfoNCPUs))
			}
			v.AvgNCPUs = x
		case "flops":
			x, ok := c.float(file, &discard)
			if !ok || x <= 0 || x > 1e18 {
				return v, numErr(c, "a number above 0")
			}
			v.Flops = x
		case "cmdline":
			v.Cmdline = c.str()
		case "file_prefix":
			v.FilePrefix = c.str()
		case "coproc":
			cu, err := parseAppInfoCoproc(c)
			if err != nil {
				return v, err
			}
			v.Coproc = cu
		case "file_ref":
			r, err := parseAppInfoFileRef(c)
			if err != nil {
				return v, err
			}
			v.FileRefs = append(v.FileRefs, r)
		case "max_ncpus", "gpu_ram", "dont_throttle", "is_wrapper", "needs_network":
			// Read by the C++ client; boincd has no use for them yet.
		default:
			unknownElement(file, c, "app_version", probs)
		}
	}
	if v.AppName == "" {
		return v, errors.New("no <app_name>")
	}
	if err := boinc.ValidateFileName(v.AppName, false); err != nil {
		return v, atLine(at["app_name"], "app_name: %w", err)
	}
	for _, s := range []struct{ what, val string }{{"platform", v.Platform}, {"plan_class", v.PlanClass}, {"api_version", v.APIVersion}} {
		if strings.ContainsAny(s.val, "\x00\n\r\t<>&") || len(s.val) > 256 {
			return v, atLine(at[s.what], "<%s> %q: not a usable name", s.what, s.val)
		}
	}
	// An empty <platform> stays empty: it means the client's primary
	// platform (parse_app_info), which the daemon knows.
	if v.AvgNCPUs == 0 {
		v.AvgNCPUs = 1
	}
	return v, nil
}

func parseAppInfoCoproc(n *node) (*boinc.CoprocUsage, error) {
	var cu boinc.CoprocUsage
	for _, c := range n.children {
		switch c.name {
		case "type":
			cu.Type = c.str()
		case "count":
			var discard []Problem
			x, ok := c.float("", &discard)
			if !ok || x <= 0 || x > maxAppInfoGPUs {
				return nil, atLine(c, "<coproc><count>%s</count>: not a number above 0", c.str())
			}
			cu.Count = x
		}
	}
	if cu.Type == "" {
		return nil, atLine(n, "<coproc> has no <type>")
	}
	if cu.Count == 0 {
		return nil, atLine(n, "<coproc> has no <count>")
	}
	// The GPU type's name before 7.0, as the reply parser accepts it.
	if cu.Type == "CUDA" {
		cu.Type = "NVIDIA"
	}
	return &cu, nil
}

func parseAppInfoFileRef(n *node) (boinc.FileRef, error) {
	var r boinc.FileRef
	var discard []Problem
	nameAt, openAt := n, n
	for _, c := range n.children {
		switch c.name {
		case "file_name":
			r.FileName, nameAt = c.str(), c
		case "open_name":
			r.OpenName, openAt = c.str(), c
		case "main_program":
			r.MainProgram = c.flag("", &discard)
		case "copy_file":
			r.CopyFile = c.flag("", &discard)
		case "optional":
			r.Optional = c.flag("", &discard)
		}
	}
	if r.FileName == "" {
		return r, atLine(n, "<file_ref> has no <file_name>")
	}
	if err := boinc.ValidateFileName(r.FileName, false); err != nil {
		return r, atLine(nameAt, "<file_ref> file_name: %w", err)
	}
	if r.OpenName != "" {
		if err := boinc.ValidateFileName(r.OpenName, true); err != nil {
			return r, atLine(openAt, "<file_ref> open_name: %w", err)
		}
	}
	return r, nil
}
