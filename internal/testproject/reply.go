package testproject

import (
	"bytes"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// schedulerVersion is what the reference server announced (7.19).
const schedulerVersion = 719

// replyBuilder writes a reply the way BOINC does: printf-style, one element
// per line, container tags on their own lines.
type replyBuilder struct{ bytes.Buffer }

func (b *replyBuilder) line(s string) { b.WriteString(s); b.WriteByte('\n') }
func (b *replyBuilder) raw(s string)  { b.WriteString(s) }
func (b *replyBuilder) linef(format string, args ...any) {
	fmt.Fprintf(&b.Buffer, format, args...)
	b.WriteByte('\n')
}

// header writes the project and account part every reply starts with, in
// the order of the captured replies.
func (b *replyBuilder) header(s *Server, base string, hostID int64, hostCreated time.Time) {
	b.line("<scheduler_reply>")
	b.linef("<scheduler_version>%d</scheduler_version>", schedulerVersion)
	b.linef("<master_url>%s</master_url>", xmlEscape(base))
	b.linef("<request_delay>%s</request_delay>", strconv.FormatFloat(s.cfg.RequestDelay.Seconds(), 'f', -1, 64))
	b.linef("<project_name>%s</project_name>", xmlEscape(s.cfg.Name))
	if hostID <= 0 {
		return
	}
	b.line("<user_name>testuser</user_name>")
	b.line("<user_total_credit>0.000000</user_total_credit>")
	b.line("<user_expavg_credit>0.000000</user_expavg_credit>")
	b.linef("<user_create_time>%d</user_create_time>", s.epoch.Unix())
	b.line("<email_hash>00000000000000000000000000000000</email_hash>")
	b.linef("<cross_project_id>%s</cross_project_id>", md5Hex([]byte(s.cfg.Name)))
	b.line("<host_total_credit>0.000000</host_total_credit>")
	b.line("<host_expavg_credit>0.000000</host_expavg_credit>")
	b.linef("<host_create_time>%d</host_create_time>", hostCreated.Unix())
	b.line("<project_preferences>")
	b.line("<resource_share>100</resource_share>")
	b.line("</project_preferences>")
}

// errorReply is a reply that refuses the request with a message, as the
// real scheduler does for unparsable requests or bad account keys.
func (s *Server) errorReply(base, msg string) []byte {
	var b replyBuilder
	b.header(s, base, 0, time.Time{})
	b.linef(`<message priority="high">%s</message>`, xmlEscape(msg))
	b.line("</scheduler_reply>")
	return b.Bytes()
}

// noWorkReply is a valid reply carrying nothing but a message.
func (s *Server) noWorkReply(base, extra string) []byte {
	var b replyBuilder
	b.header(s, base, 0, time.Time{})
	b.raw(extra)
	b.line(`<message priority="low">No tasks sent</message>`)
	b.line("</scheduler_reply>")
	return b.Bytes()
}

// writeOversized streams a well-formed no-work reply padded past 20 MiB
// with an element the client does not know.
func (s *Server) writeOversized(w http.ResponseWriter, base string) {
	pre := s.noWorkReply(base, "")
	end := []byte("</scheduler_reply>\n")
	pre = pre[:len(pre)-len(end)]
	lineText := []byte(strings.Repeat("x", 63) + "\n")
	nLines := oversizedReplyBytes/len(lineText) + 1
	open, closeTag := []byte("<padding>\n"), []byte("</padding>\n")
	total := len(pre) + len(open) + nLines*len(lineText) + len(closeTag) + len(end)
	w.Header().Set("Content-Type", "text/xml")
	w.Header().Set("Content-Length", strconv.Itoa(total))
	if _, err := w.Write(append(pre, open...)); err != nil {
		return
	}
	chunk := bytes.Repeat(lineText, 1024)
	for left := nLines; left > 0; {
		n := min(left, 1024)
		if _, err := w.Write(chunk[:n*len(lineText)]); err != nil {
			return
		}
		left -= n
	}
	_, _ = w.Write(append(closeTag, end...))
}

func downloadURL(base, name string) string {
	return base + "download/" + url.PathEscape(name)
}

func uploadURL(base string) string { return base + "cgi-bin/file_upload_handler" }

// writeJobLocked writes one job: the app and its version (once per reply),
// the input file, the workunit, the output file and the result, in the
// order of the captured reply.
func (s *Server) writeJobLocked(b *replyBuilder, j *Job, appsSent map[string]bool, base string) {
	var app *appState
	for _, a := range s.apps {
		if a.Name == j.App && (app == nil || a.Platform == j.Platform) {
			app = a
		}
	}
	tmpl := s.cfg.Job
	if !appsSent[app.Name] && !j.Anonymous {
		appsSent[app.Name] = true
		b.line("<app>")
		b.linef("    <name>%s</name>", xmlEscape(app.Name))
		b.linef("    <user_friendly_name>%s</user_friendly_name>", xmlEscape(app.FriendlyName))
		b.line("</app>")
	}
	// Each platform's version once per reply (the app above is one for
	// all of them).
	if vkey := app.Name + "\x00" + j.Platform; !appsSent[vkey] && !j.Anonymous {
		appsSent[vkey] = true
		for _, f := range app.files {
			b.line("<file_info>")
			b.linef("    <name>%s</name>", xmlEscape(f.Name))
			b.linef("    <url>%s</url>", xmlEscape(downloadURL(base, f.Name)))
			if f.Executable || f.MainProgram {
				b.line("    <executable/>")
			}
			b.linef("    <nbytes>%d</nbytes>", f.size)
			b.linef("    <md5_cksum>%s</md5_cksum>", f.md5)
			if f.signature != "" {
				b.line("    <file_signature>")
				b.raw(f.signature)
				b.line("</file_signature>")
			}
			b.line("</file_info>")
		}
		b.line("<app_version>")
		b.linef("    <app_name>%s</app_name>", xmlEscape(app.Name))
		b.linef("    <version_num>%d</version_num>", app.VersionNum)
		b.linef("    <platform>%s</platform>", xmlEscape(j.Platform))
		if app.PlanClass != "" {
			b.linef("    <plan_class>%s</plan_class>", xmlEscape(app.PlanClass))
		}
		if app.APIVersion != "" {
			b.linef("    <api_version>%s</api_version>", xmlEscape(app.APIVersion))
		}
		b.linef("    <avg_ncpus>%f</avg_ncpus>", app.AvgNCPUs)
		b.linef("    <flops>%f</flops>", app.Flops)
		if app.NGPUs > 0 {
			// The host usage a real scheduler adds to a GPU version
			// (sched_send.cpp: <coproc> with the proc type's XML name).
			b.line("    <coproc>")
			b.line("        <type>NVIDIA</type>")
			b.linef("        <count>%f</count>", app.NGPUs)
			b.line("    </coproc>")
		}
		for _, f := range app.files {
			b.line("    <file_ref>")
			b.linef("        <file_name>%s</file_name>", xmlEscape(f.Name))
			if f.MainProgram {
				b.line("        <main_program/>")
			}
			b.line("    </file_ref>")
		}
		b.line("</app_version>")
	}
	if j.InputFile != "" {
		b.line("<file_info>")
		b.linef("    <name>%s</name>", xmlEscape(j.InputFile))
		if !s.cfg.Job.GzipOnly {
			b.linef("    <url>%s</url>", xmlEscape(downloadURL(base, j.InputFile)))
		}
		if j.InputGzipFile != "" {
			// What stage_file --gzip makes the scheduler send.
			b.linef("    <gzipped_url>%s</gzipped_url>", xmlEscape(downloadURL(base, j.InputGzipFile)))
			b.linef("    <gzipped_nbytes>%d</gzipped_nbytes>", j.InputGzipSize)
		}
		b.linef("    <nbytes>%d</nbytes>", j.InputSize)
		b.linef("    <md5_cksum>%s</md5_cksum>", j.InputMD5)
		b.line("</file_info>")
	}
	b.line("<workunit>")
	b.linef("    <name>%s</name>", xmlEscape(j.WUName))
	b.linef("    <app_name>%s</app_name>", xmlEscape(app.Name))
	if !j.Anonymous {
		b.linef("    <version_num>%d</version_num>", app.VersionNum)
	}
	b.linef("    <command_line>%s</command_line>", xmlEscape(j.CommandLine))
	b.linef("    <rsc_fpops_est>%e</rsc_fpops_est>", tmpl.FpopsEst)
	b.linef("    <rsc_fpops_bound>%e</rsc_fpops_bound>", tmpl.FpopsBound)
	b.linef("    <rsc_memory_bound>%e</rsc_memory_bound>", 1e8)
	b.linef("    <rsc_disk_bound>%e</rsc_disk_bound>", 1e8+float64(j.InputSize)+tmpl.MaxOutputBytes)
	if j.InputFile != "" {
		b.line("    <file_ref>")
		b.linef("        <file_name>%s</file_name>", xmlEscape(j.InputFile))
		b.linef("        <open_name>%s</open_name>", xmlEscape(tmpl.InputOpenName))
		b.line("    </file_ref>")
	}
	b.line("</workunit>")
	for _, o := range j.OutputFiles {
		b.line("<file_info>")
		b.linef("    <name>%s</name>", xmlEscape(o))
		b.line("    <generated_locally/>")
		b.line("    <upload_when_present/>")
		b.linef("    <max_nbytes>%.0f</max_nbytes>", tmpl.MaxOutputBytes)
		b.linef("    <url>%s</url>", xmlEscape(uploadURL(base)))
		if sig := s.outputs[o].xmlSignature; sig != "" {
			b.line("<xml_signature>")
			b.raw(sig)
			b.line("</xml_signature>")
		}
		b.line("</file_info>")
	}
	b.line("<result>")
	b.linef("    <name>%s</name>", xmlEscape(j.ResultName))
	b.linef("    <wu_name>%s</wu_name>", xmlEscape(j.WUName))
	b.linef("    <report_deadline>%d</report_deadline>", j.Deadline.Unix())
	b.linef("    <platform>%s</platform>", xmlEscape(j.Platform))
	b.linef("    <version_num>%d</version_num>", j.VersionNum)
	if j.PlanClass != "" {
		b.linef("    <plan_class>%s</plan_class>", xmlEscape(j.PlanClass))
	}
	for _, o := range j.OutputFiles {
		b.line("    <file_ref>")
		b.linef("        <file_name>%s</file_name>", xmlEscape(o))
		b.linef("        <open_name>%s</open_name>", xmlEscape(tmpl.OutputOpenName))
		if tmpl.CopyOutput {
			b.line("        <copy_file/>")
		}
		b.line("    </file_ref>")
	}
	if tmpl.ReportImmediately {
		b.line("    <report_immediately/>")
	}
	b.line("</result>")
}
