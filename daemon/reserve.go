package daemon

import "os"

// writeZeros fills f with size zero bytes from the start.
func writeZeros(f *os.File, size int64) error {
	if err := f.Truncate(0); err != nil {
		return err
	}
	buf := make([]byte, 1<<20)
	for off := int64(0); off < size; {
		n := min(int64(len(buf)), size-off)
		if _, err := f.WriteAt(buf[:n], off); err != nil {
			return err
		}
		off += n
	}
	return f.Sync()
}
