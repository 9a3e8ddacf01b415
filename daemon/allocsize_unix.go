//go:build unix

package daemon

import (
	"io/fs"
	"syscall"
)

// allocSize is the disk space a file takes, st_blocks × 512 as the C++
// client's file_size_alloc counts it: a sparse file counts what it holds,
// a small one a whole block.
func allocSize(info fs.FileInfo) float64 {
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		return float64(int64(st.Blocks) * 512)
	}
	return float64(info.Size())
}
