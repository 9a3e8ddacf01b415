package statefile

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
)

// The on-disk layout of bbolt v1 files (go.etcd.io/bbolt internal/common),
// reproduced here because bbolt walks its pages through the memory map
// without bounds checks: a damaged page reference makes it read outside
// the map, which crashes the process instead of returning an error. This
// checker reads the same structures with ordinary file reads and checks
// every offset first, so that by the time bbolt touches a file every page
// it can reach is known to be inside the file and well formed.
const (
	pageHeaderSize = 16 // id u64, flags u16, count u16, overflow u32
	elementSize    = 16 // branch: pos u32, ksize u32, pgid u64; leaf: flags, pos, ksize, vsize u32
	metaSize       = 64 // magic, version, pageSize, flags u32; root, seq, freelist, pgid, txid, checksum u64
	metaSumLen     = 56 // the checksum covers the fields before it

	boltMagic   uint32 = 0xED0CDAED
	boltVersion uint32 = 2
	noFreelist  uint64 = 0xffffffffffffffff

	branchPageFlag   = 0x01
	leafPageFlag     = 0x02
	freelistPageFlag = 0x10
	bucketLeafFlag   = 0x01
	bucketHeaderSize = 16 // root pgid u64, sequence u64; an inline page follows when root is 0

	// maxTreeDepth is far beyond any real bbolt tree (fan-out is in the
	// hundreds) and stops reference cycles from recursing forever.
	maxTreeDepth = 64
	// maxPages bounds the high-water mark so offset arithmetic cannot
	// overflow.
	maxPages = 1 << 40
)

// Page and meta fields are in the byte order of the machine that wrote the
// file; bbolt files are not portable across byte orders either.
var ne = binary.NativeEndian

type boltMeta struct {
	pageSize uint32
	root     uint64
	freelist uint64
	pgid     uint64 // high-water mark: pages [0, pgid) are in use or free
	txid     uint64
}

// parseMeta decodes and validates the meta of the page starting at buf.
func parseMeta(buf []byte) (boltMeta, error) {
	if len(buf) < pageHeaderSize+metaSize {
		return boltMeta{}, errors.New("meta page is cut short")
	}
	m := buf[pageHeaderSize : pageHeaderSize+metaSize]
	if ne.Uint32(m[0:]) != boltMagic {
		return boltMeta{}, errors.New("meta page has no bbolt magic number")
	}
	if v := ne.Uint32(m[4:]); v != boltVersion {
		return boltMeta{}, fmt.Errorf("meta page has bbolt format version %d, not %d", v, boltVersion)
	}
	h := fnv.New64a()
	h.Write(m[:metaSumLen])
	if h.Sum64() != ne.Uint64(m[metaSumLen:]) {
		return boltMeta{}, errors.New("meta page checksum mismatch")
	}
	return boltMeta{
		pageSize: ne.Uint32(m[8:]),
		root:     ne.Uint64(m[16:]),
		freelist: ne.Uint64(m[32:]),
		pgid:     ne.Uint64(m[40:]),
		txid:     ne.Uint64(m[48:]),
	}, nil
}

type fileChecker struct {
	f     *os.File
	size  int64
	psz   int64
	hwm   uint64
	used  map[uint64]bool // pages claimed by the freelist or the tree
	freed map[uint64]bool // pages the freelist says are free
}

// verifyFile checks the structure of the bbolt file at path without
// modifying it: meta pages, the freelist, and the whole page tree that
// bbolt reads through. The error describes the first problem found.
func verifyFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("open for checking: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("stat: %w", err)
	}
	c := &fileChecker{f: f, size: fi.Size(), used: make(map[uint64]bool), freed: make(map[uint64]bool)}

	psz, err := c.findPageSize()
	if err != nil {
		return err
	}
	if psz < 512 || psz > 1<<28 {
		return fmt.Errorf("implausible page size %d", psz)
	}
	c.psz = int64(psz)
	m, err := c.currentMeta()
	if err != nil {
		return err
	}
	if int64(m.pageSize) != c.psz {
		return fmt.Errorf("meta pages disagree on the page size (%d and %d)", psz, m.pageSize)
	}
	if m.pgid < 3 || m.pgid > maxPages {
		return fmt.Errorf("meta page gives an implausible page count %d", m.pgid)
	}
	c.hwm = m.pgid
	if need := int64(m.pgid) * c.psz; need > c.size {
		return fmt.Errorf("file is truncated: it has %d bytes but its data reaches %d bytes", c.size, need)
	}
	c.used[0], c.used[1] = true, true
	if err := c.checkFreelist(m.freelist); err != nil {
		return err
	}
	return c.visit(m.root, "the root bucket", 0)
}

// findPageSize does what bbolt does: trust the first meta page if it is
// valid, else look for the second one at each possible page size.
func (c *fileChecker) findPageSize() (uint32, error) {
	buf := make([]byte, 4096)
	if n, _ := c.f.ReadAt(buf, 0); n == len(buf) {
		if m, err := parseMeta(buf); err == nil {
			return m.pageSize, nil
		}
	}
	for i := 0; i <= 14; i++ {
		pos := int64(1024) << i
		if pos >= c.size-1024 {
			break
		}
		n, _ := c.f.ReadAt(buf, pos)
		if m, err := parseMeta(buf[:n]); err == nil {
			return m.pageSize, nil
		}
	}
	return 0, fmt.Errorf("no valid bbolt meta page found in %d bytes", c.size)
}

// currentMeta picks the meta page bbolt would use: the valid one with the
// higher transaction id.
func (c *fileChecker) currentMeta() (boltMeta, error) {
	var metas [2]boltMeta
	var errs [2]error
	for i := range metas {
		buf := make([]byte, pageHeaderSize+metaSize)
		if _, err := c.f.ReadAt(buf, int64(i)*c.psz); err != nil {
			errs[i] = fmt.Errorf("read meta page %d: %w", i, err)
			continue
		}
		metas[i], errs[i] = parseMeta(buf)
	}
	a, b := 0, 1
	if metas[1].txid > metas[0].txid {
		a, b = 1, 0
	}
	if errs[a] == nil {
		return metas[a], nil
	}
	if errs[b] == nil {
		return metas[b], nil
	}
	return boltMeta{}, fmt.Errorf("both meta pages are damaged (%v; %v)", errs[0], errs[1])
}

// readPage reads page id with its overflow pages after checking that they
// lie below the high-water mark (and so, inside the file).
func (c *fileChecker) readPage(id uint64, what string) ([]byte, error) {
	if id < 2 || id >= c.hwm {
		return nil, fmt.Errorf("%s points to page %d, outside the data pages 2..%d", what, id, c.hwm-1)
	}
	var hdr [pageHeaderSize]byte
	if _, err := c.f.ReadAt(hdr[:], int64(id)*c.psz); err != nil {
		return nil, fmt.Errorf("read page %d: %w", id, err)
	}
	if got := ne.Uint64(hdr[0:]); got != id {
		return nil, fmt.Errorf("page %d (%s) says it is page %d", id, what, got)
	}
	overflow := uint64(ne.Uint32(hdr[12:]))
	if id+overflow >= c.hwm {
		return nil, fmt.Errorf("page %d (%s) runs %d pages past the end of the data", id, what, id+overflow-c.hwm+1)
	}
	for p := id; p <= id+overflow; p++ {
		if c.used[p] {
			return nil, fmt.Errorf("page %d (%s) is used twice", p, what)
		}
		c.used[p] = true
	}
	buf := make([]byte, int64(overflow+1)*c.psz)
	if _, err := c.f.ReadAt(buf, int64(id)*c.psz); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("read page %d: %w", id, err)
	}
	return buf, nil
}

func (c *fileChecker) checkFreelist(id uint64) error {
	if id == noFreelist {
		return nil // bbolt rebuilds it by scanning; nothing to trust here
	}
	buf, err := c.readPage(id, "the freelist")
	if err != nil {
		return err
	}
	if flags := ne.Uint16(buf[8:]); flags != freelistPageFlag {
		return fmt.Errorf("freelist page %d has type flags 0x%x", id, flags)
	}
	count, first := uint64(ne.Uint16(buf[10:])), uint64(pageHeaderSize)
	if count == 0xFFFF { // the real count is the first element
		count = ne.Uint64(buf[pageHeaderSize:])
		first += 8
	}
	if count > uint64(len(buf)) || first+count*8 > uint64(len(buf)) {
		return fmt.Errorf("freelist page %d claims %d entries, more than fit", id, count)
	}
	for i := uint64(0); i < count; i++ {
		p := ne.Uint64(buf[first+i*8:])
		if p < 2 || p >= c.hwm {
			return fmt.Errorf("freelist lists page %d, outside the data pages 2..%d", p, c.hwm-1)
		}
		if c.freed[p] {
			return fmt.Errorf("freelist lists page %d twice", p)
		}
		c.freed[p] = true
	}
	return nil
}

// visit checks the tree page id, referenced from what, and everything
// below it.
func (c *fileChecker) visit(id uint64, what string, depth int) error {
	if depth > maxTreeDepth {
		return fmt.Errorf("page tree deeper than %d levels at %s (a reference cycle?)", maxTreeDepth, what)
	}
	buf, err := c.readPage(id, what)
	if err != nil {
		return err
	}
	for p := id; p < id+uint64(len(buf))/uint64(c.psz); p++ {
		if c.freed[p] {
			return fmt.Errorf("page %d (%s) is in use but listed as free", p, what)
		}
	}
	return c.node(buf, fmt.Sprintf("page %d", id), depth, false)
}

// node checks the branch or leaf page in buf (a real page, or an inline
// bucket's page inside a value).
func (c *fileChecker) node(buf []byte, where string, depth int, inline bool) error {
	if len(buf) < pageHeaderSize {
		return fmt.Errorf("%s is cut short", where)
	}
	flags, count := ne.Uint16(buf[8:]), int(ne.Uint16(buf[10:]))
	if pageHeaderSize+count*elementSize > len(buf) {
		return fmt.Errorf("%s claims %d elements, more than fit", where, count)
	}
	var prev []byte
	for i := 0; i < count; i++ {
		e := buf[pageHeaderSize+i*elementSize:]
		switch {
		case flags == branchPageFlag && !inline:
			key, _, err := slicePair(buf, i, uint64(ne.Uint32(e[0:])), uint64(ne.Uint32(e[4:])), 0)
			if err != nil {
				return fmt.Errorf("%s element %d: %w", where, i, err)
			}
			if i > 0 && bytes.Compare(prev, key) >= 0 {
				return fmt.Errorf("%s: keys out of order at element %d", where, i)
			}
			prev = key
			if err := c.visit(ne.Uint64(e[8:]), fmt.Sprintf("%s element %d", where, i), depth+1); err != nil {
				return err
			}
		case flags == leafPageFlag:
			eflags := ne.Uint32(e[0:])
			key, val, err := slicePair(buf, i, uint64(ne.Uint32(e[4:])), uint64(ne.Uint32(e[8:])), uint64(ne.Uint32(e[12:])))
			if err != nil {
				return fmt.Errorf("%s element %d: %w", where, i, err)
			}
			if i > 0 && bytes.Compare(prev, key) >= 0 {
				return fmt.Errorf("%s: keys out of order at element %d", where, i)
			}
			prev = key
			switch eflags {
			case 0:
			case bucketLeafFlag:
				if err := c.bucket(key, val, where, depth); err != nil {
					return err
				}
			default:
				return fmt.Errorf("%s element %d has unknown flags 0x%x", where, i, eflags)
			}
		default:
			return fmt.Errorf("%s has type flags 0x%x where a branch or leaf page belongs", where, flags)
		}
	}
	if count == 0 && flags != leafPageFlag {
		return fmt.Errorf("%s has type flags 0x%x and no elements", where, flags)
	}
	return nil
}

// bucket checks a bucket header value and the bucket's tree.
func (c *fileChecker) bucket(name, val []byte, where string, depth int) error {
	what := fmt.Sprintf("bucket %q in %s", name, where)
	if len(val) < bucketHeaderSize {
		return fmt.Errorf("%s: header is cut short", what)
	}
	if root := ne.Uint64(val); root != 0 {
		return c.visit(root, what, depth+1)
	}
	inline := val[bucketHeaderSize:]
	if len(inline) >= pageHeaderSize && ne.Uint16(inline[8:]) != leafPageFlag {
		return fmt.Errorf("%s: inline page is not a leaf page", what)
	}
	return c.node(inline, what+" (inline)", depth+1, true)
}

// slicePair returns the key and value of element i, whose pos is relative
// to the element itself, after checking they lie inside buf.
func slicePair(buf []byte, i int, pos, ksize, vsize uint64) (key, val []byte, err error) {
	start := uint64(pageHeaderSize+i*elementSize) + pos
	kend := start + ksize
	vend := kend + vsize
	if vend > uint64(len(buf)) {
		return nil, nil, fmt.Errorf("key/value at offset %d (%d+%d bytes) lies outside its page of %d bytes", start, ksize, vsize, len(buf))
	}
	return buf[start:kend], buf[kend:vend], nil
}
