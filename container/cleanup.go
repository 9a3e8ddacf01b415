package container

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
)

// Names of BOINC's images and containers, as the 8.x client and
// docker_wrapper make them (lib/util.cpp docker_image_name and
// docker_container_name): "boinc__" + the project's directory name (its
// escaped URL) + "__" + the workunit name (images) or the result name
// (containers), all lower case because engines refuse upper case.
//
// Assumption, where the reference is silent: later wrappers name an image
// after the app version rather than the workunit so that jobs share it;
// Keep therefore also keeps any image of a project whose rest begins with
// the name of an app that still has a task here. A name kept by mistake
// costs disk until the next cleanup; one removed by mistake costs a
// running job, so the rules lean to keeping.
const namePrefix = "boinc__"

// ImageName is the image a job of workunit wu of the project whose
// directory is projectDir uses.
func ImageName(projectDir, wu string) string {
	return strings.ToLower(namePrefix + projectDir + "__" + wu)
}

// ContainerName is the container the job for result runs in.
func ContainerName(projectDir, result string) string {
	return strings.ToLower(namePrefix + projectDir + "__" + result)
}

// Owned reports whether an image or container name is BOINC's. The
// wrapper builds its images locally, so they carry no registry, or
// podman's "localhost/"; a tag is ignored. An image pulled from elsewhere
// is never BOINC's, whatever its name.
func Owned(name string) bool {
	if i := strings.LastIndexByte(name, '/'); i >= 0 && name[:i] != "localhost" {
		return false
	}
	return strings.HasPrefix(bareName(name), namePrefix)
}

// bareName strips the registry path and the tag of an image reference.
func bareName(name string) string {
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
	}
	if i := strings.IndexAny(name, ":@"); i >= 0 {
		name = name[:i]
	}
	return strings.ToLower(name)
}

// Task is one task still in the client's state: its images and container
// are in use.
type Task struct {
	ProjectDir string // the project's directory name (escaped URL)
	App        string
	Workunit   string
	Result     string
}

// Keep is the set of BOINC names in use.
type Keep struct {
	containers map[string]bool
	images     map[string]bool
	// imagePrefixes: "boinc__<project>__<app>" of each app with a task.
	imagePrefixes []string
}

// KeepFor is what tasks use.
func KeepFor(tasks []Task) Keep {
	k := Keep{containers: map[string]bool{}, images: map[string]bool{}}
	for _, t := range tasks {
		k.containers[ContainerName(t.ProjectDir, t.Result)] = true
		k.images[ImageName(t.ProjectDir, t.Workunit)] = true
		if t.App != "" {
			k.imagePrefixes = append(k.imagePrefixes, ImageName(t.ProjectDir, t.App))
			k.imagePrefixes = append(k.imagePrefixes, ImageName(t.ProjectDir, "app_"+t.App))
		}
	}
	slices.Sort(k.imagePrefixes)
	k.imagePrefixes = slices.Compact(k.imagePrefixes)
	return k
}

func (k Keep) keepContainer(name string) bool { return k.containers[bareName(name)] }

func (k Keep) keepImage(name string) bool {
	n := bareName(name)
	if k.images[n] {
		return true
	}
	for _, p := range k.imagePrefixes {
		if strings.HasPrefix(n, p) {
			return true
		}
	}
	return false
}

// Removed is one image or container Cleanup removed.
type Removed struct {
	Kind string // "container" or "image"
	Name string
}

// Cleanup removes BOINC's containers, then its images, that keep does not
// name, with the engine's CLI, and logs each removal. Nothing without
// BOINC's prefix is touched. Containers go first: an image cannot be
// removed while a container of it exists. Errors are per object and
// returned together; the rest is still cleaned.
func Cleanup(ctx context.Context, run Runner, e Engine, keep Keep, log *slog.Logger) ([]Removed, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var removed []Removed
	var errs []string
	out, err := run.Run(ctx, e.CLI, "ps", "--all", "--format", "{{.Names}}")
	if err != nil {
		errs = append(errs, fmt.Sprintf("listing containers: %s", brief(err, out)))
	} else {
		for _, name := range listed(out) {
			if !Owned(name) || keep.keepContainer(name) {
				continue
			}
			// --force: a container whose task is gone may still run
			// (its wrapper was killed by a detach or a crash).
			if o, err := run.Run(ctx, e.CLI, "rm", "--force", name); err != nil {
				errs = append(errs, fmt.Sprintf("removing container %s: %s", name, brief(err, o)))
				continue
			}
			removed = append(removed, Removed{"container", name})
			log.Info("removed a container no task uses", slog.String("container", name), slog.String("engine", e.Type.String()))
		}
	}
	out, err = run.Run(ctx, e.CLI, "image", "ls", "--format", "{{.Repository}}:{{.Tag}}")
	if err != nil {
		errs = append(errs, fmt.Sprintf("listing images: %s", brief(err, out)))
	} else {
		for _, name := range listed(out) {
			if !Owned(name) || keep.keepImage(name) {
				continue
			}
			if o, err := run.Run(ctx, e.CLI, "image", "rm", name); err != nil {
				errs = append(errs, fmt.Sprintf("removing image %s: %s", name, brief(err, o)))
				continue
			}
			removed = append(removed, Removed{"image", name})
			log.Info("removed an image no task uses", slog.String("image", name), slog.String("engine", e.Type.String()))
		}
	}
	if len(errs) > 0 {
		return removed, fmt.Errorf("container cleanup (%s): %s", e.CLI, strings.Join(errs, "; "))
	}
	return removed, nil
}

// listed is one name per non-empty output line; "<none>:<none>" (an
// untagged image) names nothing.
func listed(out []byte) []string {
	var names []string
	for l := range strings.Lines(string(out)) {
		n := strings.TrimSpace(l)
		if n == "" || strings.HasPrefix(n, "<none>") {
			continue
		}
		names = append(names, n)
	}
	return names
}

// IsApp reports whether an app version with this plan class runs its
// jobs in containers: BOINC names such plan classes after docker
// ("docker", "docker_cpu", "linux_docker_…").
func IsApp(planClass string) bool {
	return strings.Contains(strings.ToLower(planClass), "docker")
}
