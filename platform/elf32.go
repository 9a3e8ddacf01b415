package platform

import (
	"encoding/binary"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// ELF e_machine values and the ARM hard-float flag (elf.h).
const (
	emI386              = 3
	emARM               = 40
	efARMABIFloatHard   = 0x400
	elfHeader32Size     = 52
	elfClass32          = 1
	elfDataLittleEndian = 1
)

// lib32 is what find32 found: a 32-bit ELF file of the wanted machine and,
// when there is one, the 32-bit program loader (ld-linux*), which can be
// run to prove the kernel runs such programs.
type lib32 struct {
	lib, loader string
}

// find32 looks through dirs for a little-endian 32-bit ELF file for
// machine (hard-float ABI for ARM, as armhf programs need): the C++
// client's `file -L` loop, which takes any "ELF 32-bit" file. It stops at
// the first loader, and otherwise reports the first library it saw.
// Unreadable entries are skipped; only regular files are opened (a FIFO
// would block).
func find32(dirs []string, machine uint16) lib32 {
	var found lib32
	for _, dir := range dirs {
		ents, err := os.ReadDir(dir)
		if err != nil {
			continue // as opendir failing: the next one
		}
		for _, e := range ents {
			path := filepath.Join(dir, e.Name())
			st, err := os.Stat(path)
			if err != nil || !st.Mode().IsRegular() || st.Size() < elfHeader32Size {
				continue
			}
			if !isELF32(path, machine) {
				continue
			}
			if found.lib == "" {
				found.lib = path
			}
			if strings.HasPrefix(e.Name(), "ld-linux") {
				found.loader = path
				return found
			}
		}
	}
	return found
}

// isELF32 reads path's ELF header: 32-bit, little-endian, machine, and
// for ARM the hard-float flag.
func isELF32(path string, machine uint16) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	var h [elfHeader32Size]byte
	if _, err := io.ReadFull(f, h[:]); err != nil {
		return false
	}
	if string(h[:4]) != "\x7fELF" || h[4] != elfClass32 || h[5] != elfDataLittleEndian {
		return false
	}
	if binary.LittleEndian.Uint16(h[18:20]) != machine {
		return false
	}
	if machine == emARM && binary.LittleEndian.Uint32(h[36:40])&efARMABIFloatHard == 0 {
		return false
	}
	return true
}
