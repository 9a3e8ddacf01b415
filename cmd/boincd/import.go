package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os/signal"
	"syscall"

	"github.com/boincd/boincd/config"
	"github.com/boincd/boincd/importer"
)

const importHelp = `usage: boincd import BOINC_DIR [--dir DIR] [--config FILE] [--dry_run]

Takes over the data directory of a C++ BOINC client (for example
/var/lib/boinc-client): its attached projects (account keys, host ids,
scheduler URLs, code-signing keys, credit), tasks in progress, finished
tasks not yet reported (they carry credit) and their files, so the
volunteer can switch to boincd without losing work.

Stop the BOINC client first: the import refuses to run while it holds
its lockfile. BOINC_DIR is only read; files are copied, so going back to
the BOINC client stays possible (do not run both on the same projects).
Each project is added to boincd's config (DIR/` + config.FileName + ` unless
--config says otherwise) so the daemon keeps it attached. A task that was
running resumes from its checkpoint. Files that are missing or do not
check out are downloaded again.

--dry_run checks everything and prints what would be imported, writing
nothing. Exit status: 0 imported, 1 refused or failed, 2 usage.
`

// runImport is "boincd import".
func runImport(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("boincd import", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, importHelp) }
	dir := fs.String("dir", ".", "boincd data directory to import into")
	cfgPath := fs.String("config", "", "boincd config file to add the projects to (default DIR/"+config.FileName+")")
	dry := fs.Bool("dry_run", false, "print what would be imported; write nothing")
	// The BOINC directory may come before or after the flags.
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return 0
			}
			return 2
		}
		if fs.NArg() == 0 {
			break
		}
		positional = append(positional, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if len(positional) != 1 {
		fmt.Fprintln(stderr, "boincd import: give exactly one BOINC data directory")
		fs.Usage()
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	sum, err := importer.Import(ctx, importer.Options{
		BOINCDir:   positional[0],
		DataDir:    *dir,
		ConfigPath: *cfgPath,
		DryRun:     *dry,
		Logger:     slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if sum != nil {
		if werr := sum.WriteText(stdout); werr != nil && err == nil {
			err = werr
		}
	}
	if err != nil {
		fmt.Fprintln(stderr, "boincd:", err)
		return 1
	}
	return 0
}
