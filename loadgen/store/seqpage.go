package store

import (
	"fmt"
	"os"
	"sync/atomic"
	"syscall"
	"unsafe"
)

// SeqPage is a page of memory shared by the coordinator and its local
// instance processes (a file in /dev/shm, unlinked once open, mapped
// MAP_SHARED in each). Word 0 is the run's sequence counter: every
// sequenced client takes the number of each event it sends from it, so the
// coordinator can apply the events of all processes in one order
// (Sequencer). Word 1 is the sync flag, non-zero while a fault's trap is
// armed: clients then wait for the answer to their Enters.
type SeqPage struct {
	file *os.File
	mem  []byte
}

// seqPageSize is the page's size: 4 KB.
const seqPageSize = 4096

// NewSeqPage makes a fresh page, its counter at 0.
func NewSeqPage() (*SeqPage, error) {
	dir := "/dev/shm"
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		dir = os.TempDir()
	}
	f, err := os.CreateTemp(dir, "lockbench-seq-*")
	if err != nil {
		return nil, fmt.Errorf("store: seq page: %w", err)
	}
	// Unlinked at once: the open files keep it, nothing is left behind.
	_ = os.Remove(f.Name())
	if err := f.Truncate(seqPageSize); err != nil {
		f.Close()
		return nil, fmt.Errorf("store: seq page: %w", err)
	}
	return mapSeqPage(f)
}

// OpenSeqPage maps the page passed as f (an instance process's fd 3).
func OpenSeqPage(f *os.File) (*SeqPage, error) { return mapSeqPage(f) }

func mapSeqPage(f *os.File) (*SeqPage, error) {
	mem, err := syscall.Mmap(int(f.Fd()), 0, seqPageSize, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("store: seq page: mmap: %w", err)
	}
	return &SeqPage{file: f, mem: mem}, nil
}

// File is the page's file, to pass to a child (exec.Cmd.ExtraFiles).
func (p *SeqPage) File() *os.File { return p.file }

func (p *SeqPage) word(i int) *atomic.Uint64 {
	// The mapping is page-aligned, so every word is 8-byte aligned.
	return (*atomic.Uint64)(unsafe.Pointer(&p.mem[8*i]))
}

// Next takes the next sequence number: 1, 2, … across every process
// sharing the page.
func (p *SeqPage) Next() uint64 { return p.word(0).Add(1) }

// Last is the last sequence number taken.
func (p *SeqPage) Last() uint64 { return p.word(0).Load() }

// Sync reports whether clients must wait for their Enters' answers.
func (p *SeqPage) Sync() bool { return p.word(1).Load() != 0 }

// SetSync sets or clears the sync flag.
func (p *SeqPage) SetSync(on bool) {
	var v uint64
	if on {
		v = 1
	}
	p.word(1).Store(v)
}

// Close unmaps the page and closes its file.
func (p *SeqPage) Close() error {
	err := syscall.Munmap(p.mem)
	if cerr := p.file.Close(); err == nil {
		err = cerr
	}
	return err
}
