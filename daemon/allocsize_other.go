//go:build !unix

package daemon

import "io/fs"

// allocSize is the file's size where no block count is at hand.
func allocSize(info fs.FileInfo) float64 { return float64(info.Size()) }
