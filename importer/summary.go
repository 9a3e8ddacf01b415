package importer

import (
	"fmt"
	"io"
	"strings"

	"github.com/boincd/boincd/boinc"
)

// Summary says what an import did (or, with DryRun, would do).
type Summary struct {
	BOINCDir   string
	DataDir    string
	ConfigPath string
	DryRun     bool
	Projects   []ProjectSummary
	// Skipped lists projects of client_state.xml that have no account
	// file: the C++ client ignores them too (they were detached).
	Skipped []string
	// Carried says what became of cc_config.xml (copied, already there,
	// kept boincd's); a project's app_config.xml is in its summary.
	Carried []string
}

// ProjectSummary is the import of one project.
type ProjectSummary struct {
	URL    string
	Name   string
	HostID int64
	// AttachOnly: the project had an account file but no state yet (it
	// was attached and never contacted); it is attached fresh.
	AttachOnly bool
	// Results counts the imported tasks by the phase they start in.
	Results map[boinc.Phase]int
	// Resumed tasks continue from their checkpoint in a copied slot.
	Resumed []string
	// Restarted tasks had been started by the C++ client but start over
	// (Reason says why: no slot, files missing...).
	Restarted []TaskNote
	// PendingReport are finished, uploaded tasks the server has not
	// acknowledged: they carry credit and are reported at the next
	// scheduler request.
	PendingReport []string
	// ToUpload are finished tasks whose outputs still go to the server.
	ToUpload []string
	// Dropped counts tasks the server had acknowledged already.
	Dropped int
	// FilesCopied and BytesCopied count the verified copies (slot
	// contents excluded).
	FilesCopied int
	BytesCopied int64
	// ToDownload are files the C++ client had that were missing or did
	// not check out (size, MD5, signature); boincd downloads them again.
	ToDownload []FileNote
	// OutputsLost are outputs of finished tasks that were not in the
	// BOINC directory: the task will be reported as an upload failure.
	OutputsLost []FileNote
	// Config says how the project is kept attached in boincd.toml.
	Config string
	// Carried says what became of the project's app_config.xml.
	Carried []string
	Notes   []string
}

// TaskNote is a task with a reason.
type TaskNote struct{ Name, Reason string }

// FileNote is a file with a reason.
type FileNote struct{ Name, Reason string }

// CreditPending counts the finished tasks that still earn credit once
// reported (uploaded or uploading).
func (p *ProjectSummary) CreditPending() int { return len(p.PendingReport) + len(p.ToUpload) }

// WriteText prints the summary for a person.
func (s *Summary) WriteText(w io.Writer) error {
	var b strings.Builder
	verb := "Imported"
	if s.DryRun {
		verb = "Dry run: would import"
	}
	fmt.Fprintf(&b, "%s from %s into %s\n", verb, s.BOINCDir, s.DataDir)
	for i := range s.Projects {
		p := &s.Projects[i]
		fmt.Fprintf(&b, "\nproject %s", p.URL)
		if p.Name != "" {
			fmt.Fprintf(&b, " (%s)", p.Name)
		}
		b.WriteString("\n")
		if p.AttachOnly {
			b.WriteString("  attached but never contacted: boincd contacts the project as a new attach\n")
		} else {
			fmt.Fprintf(&b, "  host id %d\n", p.HostID)
		}
		total := 0
		for _, n := range p.Results {
			total += n
		}
		fmt.Fprintf(&b, "  tasks: %d", total)
		if total > 0 {
			var parts []string
			for ph := boinc.PhaseNew; ph <= boinc.PhaseAcked; ph++ {
				if n := p.Results[ph]; n > 0 {
					parts = append(parts, fmt.Sprintf("%d %s", n, ph))
				}
			}
			fmt.Fprintf(&b, " (%s)", strings.Join(parts, ", "))
		}
		if p.Dropped > 0 {
			fmt.Fprintf(&b, "; %d already acknowledged by the server, not imported", p.Dropped)
		}
		b.WriteString("\n")
		fmt.Fprintf(&b, "  credit pending: %d finished task(s) to report", p.CreditPending())
		if len(p.PendingReport) > 0 {
			fmt.Fprintf(&b, "; reported at the next scheduler request: %s", strings.Join(p.PendingReport, ", "))
		}
		b.WriteString("\n")
		if len(p.ToUpload) > 0 {
			fmt.Fprintf(&b, "  to upload, then report: %s\n", strings.Join(p.ToUpload, ", "))
		}
		for _, r := range p.Resumed {
			fmt.Fprintf(&b, "  resumes from its checkpoint: %s\n", r)
		}
		for _, r := range p.Restarted {
			fmt.Fprintf(&b, "  starts over: %s (%s)\n", r.Name, r.Reason)
		}
		fmt.Fprintf(&b, "  files copied: %d (%d bytes); missing or bad: %d\n", p.FilesCopied, p.BytesCopied, len(p.ToDownload)+len(p.OutputsLost))
		for _, f := range p.ToDownload {
			fmt.Fprintf(&b, "  to download again: %s (%s)\n", f.Name, f.Reason)
		}
		for _, f := range p.OutputsLost {
			fmt.Fprintf(&b, "  output lost, task will be reported as an upload error: %s (%s)\n", f.Name, f.Reason)
		}
		if p.Config != "" {
			fmt.Fprintf(&b, "  config: %s\n", p.Config)
		}
		for _, c := range p.Carried {
			fmt.Fprintf(&b, "  %s\n", c)
		}
		for _, n := range p.Notes {
			fmt.Fprintf(&b, "  note: %s\n", n)
		}
	}
	for _, c := range s.Carried {
		fmt.Fprintf(&b, "\n%s\n", c)
	}
	for _, u := range s.Skipped {
		fmt.Fprintf(&b, "\nskipped %s: it has no account file (the BOINC client treats it as detached)\n", u)
	}
	if s.DryRun {
		b.WriteString("\nNothing was written.\n")
	} else {
		b.WriteString("\nThe BOINC directory was not changed. Start boincd on " + s.DataDir + "; keep the BOINC client stopped.\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}
