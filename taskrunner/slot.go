package taskrunner

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/boincd/boincd/boinc"
	"github.com/boincd/boincd/boincapi"
)

// Slot files owned by the client or the API; a server-supplied open name
// must not collide with them (it could fake a finish file, say).
const (
	setupMarker    = "boinc_setup_complete"
	stderrFileName = "stderr.txt"
	taskStateFile  = "boinc_task_state.xml"
)

var reservedNames = map[string]bool{
	boincapi.InitDataFileName:      true,
	boincapi.MmapFileName:          true,
	boincapi.FinishFileName:        true,
	boincapi.TemporaryExitFileName: true,
	setupMarker:                    true,
	stderrFileName:                 true,
	taskStateFile:                  true,
	"boinc_lockfile":               true,
}

// outputSpec is one output the task must produce.
type outputSpec struct {
	ref      boinc.FileRef
	slotName string
	copy     bool
	maxBytes float64
}

// slotEntry is one file reference to materialise in the slot.
type slotEntry struct {
	physical string
	name     string // slot-relative, may contain '/'
	copy     bool
	output   bool
}

func slotDir(dataDir string, n int) string {
	return filepath.Join(dataDir, "slots", strconv.Itoa(n))
}

func dirMissingOrEmpty(dir string) (bool, error) {
	f, err := os.Open(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("slot %s: %w", dir, err)
	}
	defer f.Close()
	names, err := f.Readdirnames(1)
	if errors.Is(err, io.EOF) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("slot %s: %w", dir, err)
	}
	return len(names) == 0, nil
}

// SlotEmpty reports whether slots/N is missing or empty, so a task may be
// set up there without removing anything first.
func SlotEmpty(dataDir string, slot int) (bool, error) {
	return dirMissingOrEmpty(slotDir(filepath.Clean(dataDir), slot))
}

// CleanSlot removes slots/N and everything in it with remove (nil:
// os.RemoveAll).
func CleanSlot(dataDir string, slot int, remove func(string) error) error {
	if slot < 0 {
		return fmt.Errorf("clean slot: invalid slot %d", slot)
	}
	if !filepath.IsAbs(dataDir) {
		return fmt.Errorf("clean slot %d: data directory %q is not absolute", slot, dataDir)
	}
	if remove == nil {
		remove = os.RemoveAll
	}
	dir := slotDir(filepath.Clean(dataDir), slot)
	if err := remove(dir); err != nil {
		return fmt.Errorf("clean slot %s: %w", dir, err)
	}
	return nil
}

// entries lists the slot entries of spec (client/app_start.cpp
// setup_slot_dir) with every name validated.
func entries(spec TaskSpec) ([]slotEntry, []outputSpec, error) {
	v, wu, res := spec.Version, spec.WU, spec.Result
	prefix := v.FilePrefix
	if prefix != "" {
		if err := boinc.ValidateFileName(prefix, true); err != nil {
			return nil, nil, fmt.Errorf("app version file_prefix: %w", err)
		}
	}
	var out []slotEntry
	var outs []outputSpec
	seen := map[string]bool{}
	add := func(ref boinc.FileRef, io, output bool) error {
		if err := boinc.ValidateFileName(ref.FileName, false); err != nil {
			return fmt.Errorf("physical name: %w", err)
		}
		fi, ok := spec.Files[ref.FileName]
		if !ok || fi == nil {
			return fmt.Errorf("file %q is referenced but not in the task's file list", ref.FileName)
		}
		name := ref.SlotName()
		copyMode := ref.CopyFile
		if io && prefix != "" {
			name = prefix + "/" + name
			copyMode = true
		}
		if err := boinc.ValidateFileName(name, true); err != nil {
			return fmt.Errorf("open name: %w", err)
		}
		if reservedNames[strings.SplitN(name, "/", 2)[0]] {
			return fmt.Errorf("open name %q collides with a BOINC slot file", name)
		}
		if seen[name] {
			return fmt.Errorf("open name %q is used twice", name)
		}
		seen[name] = true
		out = append(out, slotEntry{physical: ref.FileName, name: name, copy: copyMode, output: output})
		if output {
			outs = append(outs, outputSpec{ref: ref, slotName: name, copy: copyMode, maxBytes: fi.MaxNBytes})
		}
		return nil
	}
	for _, ref := range v.FileRefs {
		if err := add(ref, false, false); err != nil {
			return nil, nil, fmt.Errorf("app version file: %w", err)
		}
	}
	for _, ref := range wu.InputFiles {
		if err := add(ref, true, false); err != nil {
			return nil, nil, fmt.Errorf("workunit input: %w", err)
		}
	}
	for _, ref := range res.OutputFiles {
		if err := add(ref, true, true); err != nil {
			return nil, nil, fmt.Errorf("result output: %w", err)
		}
	}
	return out, outs, nil
}

// prepare sets up the slot directory and builds the task (not started).
// With an app account, outputs are written in the slot (copy mode) and
// moved out by the runner, so the app never needs to write in the
// project directory, and the project files the slot links to are made
// readable to it.
func (r *Runner) prepare(ctx context.Context, spec TaskSpec, slot int, acct *AppAccount) (*task, error) {
	esc := spec.Project.Dir()
	projDir := filepath.Join(r.dataDir, "projects", esc)
	dir := slotDir(r.dataDir, slot)
	ents, outs, err := entries(spec)
	if err != nil {
		return nil, err
	}
	main, ok := spec.Version.MainProgram()
	if !ok {
		return nil, fmt.Errorf("app version %s %d has no main program", spec.Version.AppName, spec.Version.VersionNum)
	}
	if acct != nil {
		for i := range ents {
			if ents[i].output {
				ents[i].copy = true
			}
		}
		for i := range outs {
			outs[i].copy = true
		}
		if err := shareDirWithApp(projDir, acct); err != nil {
			return nil, fmt.Errorf("project directory for app_user %s: %w", acct.Name, err)
		}
		for _, e := range ents {
			if !e.output && !e.copy {
				if err := shareWithApp(filepath.Join(projDir, e.physical), acct); err != nil {
					return nil, fmt.Errorf("project file for app_user %s: %w", acct.Name, err)
				}
			}
		}
		if err := shareWithApp(filepath.Join(projDir, main.FileName), acct); err != nil {
			return nil, fmt.Errorf("main program for app_user %s: %w", acct.Name, err)
		}
	}
	if err := os.MkdirAll(dir, 0o771); err != nil {
		return nil, fmt.Errorf("create slot: %w", err)
	}
	links := make(map[string]string, len(ents))
	for _, e := range ents {
		if !e.copy {
			links[e.name] = boincapi.SoftLinkContent("../../projects/" + esc + "/" + e.physical)
		}
	}
	// The marker names the task the slot was set up for: a slot left by
	// another task (one whose start failed, say) must never pass for this
	// one's, or this task would compute on that task's input links and
	// report the result as its own. An empty marker is from a boincd that
	// did not name it and is trusted, so such slots resume.
	marker, err := os.ReadFile(filepath.Join(dir, setupMarker))
	switch {
	case err == nil && len(marker) > 0 && string(marker) != spec.Result.Name:
		r.log.Warn("slot was set up for another task; setting it up again", "slot", slot, "result", spec.Result.Name, "set_up_for", string(marker))
		if err := r.cfg.RemoveAll(dir); err != nil {
			return nil, fmt.Errorf("clear slot %d of %s: %w: %w", slot, marker, ErrSlotNotCleared, err)
		}
		if err := os.MkdirAll(dir, 0o771); err != nil {
			return nil, fmt.Errorf("create slot: %w", err)
		}
		fallthrough
	case errors.Is(err, fs.ErrNotExist):
		if err := setupFiles(ctx, dir, projDir, ents, links); err != nil {
			return nil, err
		}
		if err := writeSlotFile(filepath.Join(dir, setupMarker), []byte(spec.Result.Name)); err != nil {
			return nil, fmt.Errorf("slot setup marker: %w", err)
		}
	case err != nil:
		return nil, fmt.Errorf("slot setup marker: %w", err)
	}
	// Files of a previous run would misclassify this one's exit.
	for _, name := range []string{boincapi.FinishFileName, boincapi.TemporaryExitFileName} {
		if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("remove stale %s: %w", name, err)
		}
	}

	res := spec.Result
	startCPU := res.CheckpointCPUTime
	var idBuf bytes.Buffer
	writeInitData(&idBuf, initParams{
		spec: spec, slot: slot, clientPID: r.cfg.ClientPID,
		projectDir: projDir, boincDir: r.dataDir,
		wuCPUTime: startCPU, startingElapsed: res.ElapsedTime,
	})
	if err := writeSlotFile(filepath.Join(dir, boincapi.InitDataFileName), idBuf.Bytes()); err != nil {
		return nil, fmt.Errorf("write init_data.xml: %w", err)
	}
	api := spec.Version.APIVersion != ""
	// Created and kept for every task, as the C++ client does
	// (ACTIVE_TASK::start): an app whose version has no api_version may
	// still link the API (BOINC's wrapper) and report through it, and
	// init_data.xml's shm_key -1 sends every API library to this file.
	// Whatever an earlier run left under its name (a link to a file
	// elsewhere, say) is removed, not written through.
	if err := removeIfPresent(filepath.Join(dir, boincapi.MmapFileName)); err != nil {
		return nil, err
	}
	shm, err := boincapi.CreateShmem(filepath.Join(dir, boincapi.MmapFileName))
	if err != nil {
		return nil, err
	}

	maxWSS := spec.Host.MNBytes * spec.Prefs.RAMMaxUsedBusyPct / 100
	diskPaths := make([]string, 0, len(outs))
	for _, o := range outs {
		diskPaths = append(diskPaths, filepath.Join(projDir, o.ref.FileName))
	}
	t := &task{
		key:      res.Key(),
		name:     res.Name,
		slot:     slot,
		dir:      dir,
		projDir:  projDir,
		api:      api,
		outputs:  outs,
		links:    links,
		startCPU: startCPU,
		maxWSS:   maxWSS,
		exitCh:   make(chan struct{}),
		acct:     acct,
		shm:      shm,
		elapsed:  res.ElapsedTime,
		cpu:      startCPU,
		ckptCPU:  res.CheckpointCPUTime,
		fraction: res.FractionDone,
		// CheckpointElapsedTime from a previous run is where elapsed time
		// stood at its last checkpoint.
		ckptElapsed:  res.CheckpointElapsedTime,
		maxElapsed:   spec.MaxElapsed,
		maxMemory:    spec.MaxMemory,
		maxDisk:      spec.MaxDisk,
		fpopsBound:   spec.WU.RscFpopsBound,
		flops:        cmp.Or(spec.Flops, spec.Version.Flops),
		memWUBound:   spec.MemoryBoundFromWU,
		throttleable: spec.GPUType == "" && !spec.DontThrottle && !spec.Container,
		container:    spec.Container,
		diskPaths:    diskPaths,
	}
	t.cmd, err = buildCommand(spec, dir, projDir, esc, main, acct)
	if err != nil {
		if shm != nil {
			shm.Close()
		}
		return nil, err
	}
	return t, nil
}

// setupFiles writes the soft-link files and copies copy_file inputs.
func setupFiles(ctx context.Context, dir, projDir string, ents []slotEntry, links map[string]string) error {
	for _, e := range ents {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("slot setup: %w", err)
		}
		p := filepath.Join(dir, filepath.FromSlash(e.name))
		if err := mkdirInSlot(dir, filepath.Dir(filepath.FromSlash(e.name))); err != nil {
			return fmt.Errorf("slot entry %q: %w", e.name, err)
		}
		switch {
		case !e.copy:
			if err := writeSlotFile(p, []byte(links[e.name])); err != nil {
				return fmt.Errorf("soft link %q: %w", e.name, err)
			}
		case !e.output:
			if err := copyFile(filepath.Join(projDir, e.physical), p); err != nil {
				return fmt.Errorf("copy input %q: %w", e.name, err)
			}
		}
		// copy_file outputs: the app creates them in the slot.
	}
	return nil
}

// buildCommand prepares the exec.Cmd: argv[0] relative to the slot, the
// shell-split command lines, LD_LIBRARY_PATH, cwd = slot.
func buildCommand(spec TaskSpec, dir, projDir, esc string, main boinc.FileRef, acct *AppAccount) (*exec.Cmd, error) {
	exe := filepath.Join(projDir, main.FileName)
	if err := checkExecutable(exe); err != nil {
		return nil, fmt.Errorf("main program: %w", err)
	}
	wuArgs, err := splitCommandLine(spec.WU.CommandLine)
	if err != nil {
		return nil, fmt.Errorf("workunit command line: %w", err)
	}
	vArgs, err := splitCommandLine(spec.Version.Cmdline)
	if err != nil {
		return nil, fmt.Errorf("app version cmdline: %w", err)
	}
	cmd := &exec.Cmd{
		Path: exe,
		Args: slices.Concat([]string{"../../projects/" + esc + "/" + main.FileName}, wuArgs, vArgs, deviceArgs(spec)),
		Dir:  dir,
		Env:  taskEnv(os.Environ(), esc),
	}
	configureCmd(cmd)
	runAs(cmd, acct)
	return cmd, nil
}

// taskEnv prepends the project directory, the slot and the data directory
// to LD_LIBRARY_PATH so apps find their shared libraries, and keeps the
// daemon's own settings from the app: BOINCD_* may carry an account key
// (BOINCD_PROJECT_AUTHENTICATOR), systemd's variables would let the app
// speak to the service manager as the daemon or read its credentials.
func taskEnv(env []string, esc string) []string {
	const key = "LD_LIBRARY_PATH="
	libs := "../../projects/" + esc + ":.:../.."
	out := make([]string, 0, len(env)+1)
	found := false
	for _, kv := range env {
		if daemonOnlyEnv(kv) {
			continue
		}
		if strings.HasPrefix(kv, key) {
			found = true
			if old := kv[len(key):]; old != "" {
				kv = key + libs + ":" + old
			} else {
				kv = key + libs
			}
		}
		out = append(out, kv)
	}
	if !found {
		out = append(out, key+libs)
	}
	return out
}

// launch starts the process with stdout to the null device and stderr
// appended to stderr.txt. With an app account the slot is handed to it
// just before the start.
func (r *Runner) launch(t *task, spec TaskSpec) error {
	stderr, err := openStderr(filepath.Join(t.dir, stderrFileName))
	if err != nil {
		return fmt.Errorf("open stderr.txt: %w", err)
	}
	defer stderr.Close()
	if t.acct != nil {
		if err := giveSlot(t.dir, t.acct); err != nil {
			return fmt.Errorf("hand the slot to app_user %s: %w", t.acct.Name, err)
		}
	}
	null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", os.DevNull, err)
	}
	defer null.Close()
	t.cmd.Stdin = null
	t.cmd.Stdout = null
	t.cmd.Stderr = stderr
	if err := t.cmd.Start(); err != nil {
		return fmt.Errorf("exec %s: %w", t.cmd.Path, err)
	}
	t.pid = t.cmd.Process.Pid
	// The group dies with the daemon, however the daemon ends.
	r.reap.watch(t.pid, t.slot, t.name)
	// Until the process is in its Job Object (Windows), a child it starts
	// at once would escape the job: os/exec cannot start it suspended.
	job, err := newJob(t.cmd.Process)
	if err != nil {
		r.log.Warn("job object; the task's children may outlive it", "result", spec.Result.Name, "pid", t.pid, "err", err)
	}
	t.job = job
	t.lastTick = time.Now()
	t.wssTime = t.lastTick
	// GPU tasks and tasks using less than a CPU feed a device and run at
	// a higher priority than CPU hogs (ACTIVE_TASK::start high_priority).
	avg := spec.Version.AvgNCPUs
	high := spec.GPUType != "" || (avg > 0 && avg < 1)
	if err := lowerPriority(t.cmd.Process, high); err != nil {
		r.log.Warn("lower task priority", "result", spec.Result.Name, "pid", t.pid, "err", err)
	}
	return nil
}

// copyFile copies a regular file to a new dst (an older dst is
// replaced, never written through: it may be a link an app planted).
func copyFile(src, dst string) error {
	in, err := openRegular(src)
	if err != nil {
		return err
	}
	defer in.Close()
	if err := removeIfPresent(dst); err != nil {
		return err
	}
	out, err := openNoFollow(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// moveFile renames src to dst, copying when they are on different file
// systems.
func moveFile(src, dst string) error {
	if err := os.Rename(src, dst); err == nil {
		return nil
	}
	if err := copyFile(src, dst); err != nil {
		return fmt.Errorf("move %s to %s: %w", src, dst, err)
	}
	if err := os.Remove(src); err != nil {
		return fmt.Errorf("move %s to %s: %w", src, dst, err)
	}
	return nil
}

// daemonOnlyEnv reports whether an environment entry belongs to the
// daemon alone.
func daemonOnlyEnv(kv string) bool {
	name, _, _ := strings.Cut(kv, "=")
	if strings.HasPrefix(name, "BOINCD_") {
		return true
	}
	switch name {
	case "NOTIFY_SOCKET", "WATCHDOG_PID", "WATCHDOG_USEC", "LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES",
		"CREDENTIALS_DIRECTORY", "INVOCATION_ID", "JOURNAL_STREAM":
		return true
	}
	return false
}

// setEnv sets name in env, replacing an earlier value.
func setEnv(env []string, name, value string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if n, _, _ := strings.Cut(kv, "="); n != name {
			out = append(out, kv)
		}
	}
	return append(out, name+"="+value)
}

func removeIfPresent(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove %s: %w", path, err)
	}
	return nil
}

// writeSlotFile creates path afresh with data. The slot may hold what an
// app left there: an old file under the name is removed first and the
// new one created exclusively, so a symbolic link planted in its place
// never makes the runner write outside the slot.
func writeSlotFile(path string, data []byte) error {
	if err := removeIfPresent(path); err != nil {
		return err
	}
	f, err := openNoFollow(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// mkdirInSlot creates slot/rel (rel is a validated relative path) and its
// parents, refusing a component that is not a real directory.
func mkdirInSlot(slot, rel string) error {
	if rel == "." || rel == "" {
		return nil
	}
	p := slot
	for _, part := range strings.Split(rel, string(filepath.Separator)) {
		p = filepath.Join(p, part)
		st, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			if err := os.Mkdir(p, 0o771); err != nil {
				return err
			}
			continue
		}
		if err != nil {
			return err
		}
		if !st.IsDir() {
			return fmt.Errorf("%s is not a directory", p)
		}
	}
	return nil
}

// openStderr opens stderr.txt for appending (it keeps earlier runs'
// output). Anything but a plain file of its own under that name is
// replaced by a new file.
func openStderr(path string) (*os.File, error) {
	f, err := openNoFollow(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err == nil {
		st, serr := f.Stat()
		if serr == nil && st.Mode().IsRegular() && fileLinks(st) == 1 {
			return f, nil
		}
		f.Close()
	}
	if err := removeIfPresent(path); err != nil {
		return nil, err
	}
	return openNoFollow(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
}

// openRegular opens a file an app may have written for reading: not
// through a symbolic link, not a FIFO or device, and not a hard link to
// a file elsewhere, so nothing outside the slot is read and reported.
func openRegular(path string) (*os.File, error) {
	f, err := openNoFollow(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	if fileLinks(st) > 1 {
		f.Close()
		return nil, fmt.Errorf("%s has %d hard links: not a file the app wrote", path, fileLinks(st))
	}
	return f, nil
}
