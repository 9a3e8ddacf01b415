package ccconfig

import "fmt"

// App is app_config.xml as read (APP_CONFIGS in the C++ client).
type App struct {
	Apps     []AppLimits
	Versions []AppVersion
	// ProjectMaxConcurrent bounds the project's running tasks (0: none).
	ProjectMaxConcurrent int
	// ReportResultsImmediately applies to every app of the project.
	ReportResultsImmediately bool
}

// AppLimits is one <app>.
type AppLimits struct {
	Name                     string
	MaxConcurrent            int // 0: no limit
	ReportResultsImmediately bool
	FractionDoneExact        bool
	// GPUUsage and CPUUsage replace the GPU versions' resource usage when
	// HasGPUVersions: GPUUsage 0.5 runs two tasks on one GPU.
	HasGPUVersions bool
	GPUUsage       float64
	CPUUsage       float64
	Line           int
}

// AppVersion is one <app_version>: its resource usage and extra command
// line, for one app (and one plan class, when given).
type AppVersion struct {
	AppName   string
	PlanClass string
	AvgNCPUs  float64 // 0: unchanged
	NGPUs     float64 // 0: unchanged
	CmdLine   string
	Line      int
}

// ParseApp reads app_config.xml. Like ParseCC it never fails: an element
// it cannot use is a problem and the rest applies. Whether the app names
// exist is for the caller to check (AppNames).
func ParseApp(file string, data []byte) (App, []Problem) {
	var ac App
	root, probs := parseTree(file, data)
	if root == nil {
		return ac, probs
	}
	var top *node
	for _, c := range root.children {
		if c.name == "app_config" {
			top = c
			break
		}
	}
	if top == nil {
		if len(probs) == 0 {
			probs = append(probs, Problem{File: file, Msg: "no <app_config> element"})
		}
		return ac, probs
	}
	for _, n := range top.children {
		switch n.name {
		case "app":
			if a, ok := parseAppLimits(file, n, &probs); ok {
				ac.Apps = append(ac.Apps, a)
			}
		case "app_version":
			if v, ok := parseAppVersion(file, n, &probs); ok {
				ac.Versions = append(ac.Versions, v)
			}
		case "project_max_concurrent":
			if v, ok := n.int(file, &probs); ok {
				if v < 0 {
					probs = append(probs, Problem{File: file, Line: n.line, Msg: "<project_max_concurrent> below 0; ignored"})
					continue
				}
				ac.ProjectMaxConcurrent = v
			}
		case "report_results_immediately":
			ac.ReportResultsImmediately = n.flag(file, &probs)
		default:
			probs = append(probs, Problem{File: file, Line: n.line, Msg: fmt.Sprintf("unknown element <%s> in <app_config>", n.name)})
		}
	}
	return ac, probs
}

func parseAppLimits(file string, n *node, probs *[]Problem) (AppLimits, bool) {
	a := AppLimits{Line: n.line}
	for _, c := range n.children {
		switch c.name {
		case "name":
			a.Name = c.str()
		case "max_concurrent":
			if v, ok := c.int(file, probs); ok {
				if v < 0 {
					*probs = append(*probs, Problem{File: file, Line: c.line, Msg: "<max_concurrent> below 0; ignored"})
					continue
				}
				a.MaxConcurrent = v
			}
		case "report_results_immediately":
			a.ReportResultsImmediately = c.flag(file, probs)
		case "fraction_done_exact":
			a.FractionDoneExact = c.flag(file, probs)
		case "gpu_versions":
			// The C++ client applies <gpu_versions> only when it gives
			// both usages; one alone is ignored (and said so here).
			var gpuOK, cpuOK bool
			gpuUse, cpuUse := 0.0, 0.0
			for _, g := range c.children {
				switch g.name {
				case "gpu_usage":
					if v, ok := g.float(file, probs); ok && v > 0 {
						gpuUse, gpuOK = v, true
					} else if ok {
						*probs = append(*probs, Problem{File: file, Line: g.line, Msg: "<gpu_usage> must be above 0"})
					}
				case "cpu_usage":
					if v, ok := g.float(file, probs); ok && v >= 0 {
						cpuUse, cpuOK = v, true
					} else if ok {
						*probs = append(*probs, Problem{File: file, Line: g.line, Msg: "<cpu_usage> below 0"})
					}
				default:
					*probs = append(*probs, Problem{File: file, Line: g.line, Msg: fmt.Sprintf("unknown element <%s> in <gpu_versions>", g.name)})
				}
			}
			if gpuOK && cpuOK {
				a.HasGPUVersions, a.GPUUsage, a.CPUUsage = true, gpuUse, cpuUse
			} else {
				*probs = append(*probs, Problem{File: file, Line: c.line, Msg: "<gpu_versions> needs both <gpu_usage> and <cpu_usage>; ignored"})
			}
		default:
			*probs = append(*probs, Problem{File: file, Line: c.line, Msg: fmt.Sprintf("unknown element <%s> in <app>", c.name)})
		}
	}
	if a.Name == "" {
		*probs = append(*probs, Problem{File: file, Line: n.line, Msg: "<app> without <name>; ignored"})
		return a, false
	}
	return a, true
}

func parseAppVersion(file string, n *node, probs *[]Problem) (AppVersion, bool) {
	v := AppVersion{Line: n.line}
	for _, c := range n.children {
		switch c.name {
		case "app_name":
			v.AppName = c.str()
		case "plan_class":
			v.PlanClass = c.str()
		case "avg_ncpus":
			if f, ok := c.float(file, probs); ok {
				if f < 0 {
					*probs = append(*probs, Problem{File: file, Line: c.line, Msg: "<avg_ncpus> below 0; ignored"})
					continue
				}
				v.AvgNCPUs = f
			}
		case "ngpus":
			if f, ok := c.float(file, probs); ok {
				if f < 0 {
					*probs = append(*probs, Problem{File: file, Line: c.line, Msg: "<ngpus> below 0; ignored"})
					continue
				}
				v.NGPUs = f
			}
		case "cmdline":
			v.CmdLine = c.str()
		default:
			*probs = append(*probs, Problem{File: file, Line: c.line, Msg: fmt.Sprintf("unknown element <%s> in <app_version>", c.name)})
		}
	}
	if v.AppName == "" {
		*probs = append(*probs, Problem{File: file, Line: n.line, Msg: "<app_version> without <app_name>; ignored"})
		return v, false
	}
	return v, true
}

// CheckAppNames reports every <app> and <app_version> whose name is not
// one of the project's apps (the C++ client's "app X not found" message),
// so that a typo is not silently without effect.
func (a *App) CheckAppNames(file string, known func(string) bool) []Problem {
	var probs []Problem
	for _, x := range a.Apps {
		if !known(x.Name) {
			probs = append(probs, Problem{File: file, Line: x.Line, Msg: fmt.Sprintf("the project has no app named %q", x.Name)})
		}
	}
	for _, v := range a.Versions {
		if !known(v.AppName) {
			probs = append(probs, Problem{File: file, Line: v.Line, Msg: fmt.Sprintf("the project has no app named %q", v.AppName)})
		}
	}
	return probs
}
