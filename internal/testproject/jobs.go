package testproject

import (
	"crypto/md5"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"os"
	"time"
)

// JobSeed is the PRNG seed of job n (n counts from 1). It depends on n
// only, so tests can recompute a job's input without asking the server.
func JobSeed(n int) uint64 {
	// splitmix64 finaliser: spreads consecutive n over the whole range.
	z := uint64(n) + 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// JobInput is the deterministic input file of job n: size bytes from a
// PCG generator seeded with JobSeed(n).
func JobInput(n, size int) []byte {
	if size <= 0 {
		return nil
	}
	r := rand.NewPCG(JobSeed(n), uint64(n))
	out := make([]byte, size+7)
	for i := 0; i < size; i += 8 {
		binary.LittleEndian.PutUint64(out[i:], r.Uint64())
	}
	return out[:size]
}

// Job is what the server handed out for one result, for test assertions.
type Job struct {
	N           int
	Seed        uint64
	App         string
	WUName      string
	ResultName  string
	CommandLine string
	InputFile   string // "" when the job has no input
	InputMD5    string
	InputSize   int
	// InputGzipFile is the download name of the input's .gz
	// (InputFile + ".gz") when the input is offered gzipped, else "";
	// InputGzipSize is its size.
	InputGzipFile string
	InputGzipSize int
	OutputFiles   []string
	HostID        int64
	// Platform, VersionNum and PlanClass name the app version the result
	// is for: the server's own, or with Anonymous the client's
	// (app_info.xml), which the reply then does not describe.
	Platform   string
	VersionNum int
	PlanClass  string
	Anonymous  bool
	SentAt     time.Time
	Deadline   time.Time
}

// appFile is an app file with everything the reply and the download route
// need, computed once.
type appFile struct {
	AppFile
	md5       string
	size      int64
	signature string // hex-lines text; "" when unsigned
}

// appState is a configured app ready to be sent.
type appState struct {
	App
	files []appFile
}

func loadApp(a App, sg *signer) (*appState, error) {
	st := &appState{App: a}
	for _, f := range a.Files {
		data := f.Data
		if f.Path != "" {
			b, err := os.ReadFile(f.Path)
			if err != nil {
				return nil, fmt.Errorf("app %q file %q: %w", a.Name, f.Name, err)
			}
			data = b
		}
		sum := md5.Sum(data)
		af := appFile{AppFile: f, md5: hex.EncodeToString(sum[:]), size: int64(len(data))}
		if sg != nil {
			sig, err := sg.signMD5Hex(data)
			if err != nil {
				return nil, fmt.Errorf("app %q file %q: %w", a.Name, f.Name, err)
			}
			af.signature = sig
		}
		st.files = append(st.files, af)
	}
	return st, nil
}

// AddJobs raises TotalJobs by n, so a test can hand its jobs out in
// rounds: one client gets the first, another the next.
func (s *Server) AddJobs(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cfg.TotalJobs += n
}
