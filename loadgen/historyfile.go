package loadgen

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/klauspost/compress/zstd"

	"github.com/lockbench/lockbench/results"
)

// HistoryFile is a Reporter that writes a run's history (Options.History)
// to a file: plain JSON lines into path.part while the run goes on,
// zstd-compressed into path once the run ends its history
// (EventHistoryEnd), so that the load does not pay for the compression.
// Its run name is the file's name without .jsonl.zst.
type HistoryFile struct {
	path string
	f    *os.File
	bw   *bufio.Writer

	mu    sync.Mutex
	buf   []byte
	err   error
	ended bool
}

// NewHistoryFile creates path.part, and path's directory.
func NewHistoryFile(path string) (*HistoryFile, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	f, err := os.Create(path + partExt)
	if err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	return &HistoryFile{path: path, f: f, bw: bufio.NewWriterSize(f, 256<<10)}, nil
}

// Interval drops iv: a history has no intervals.
func (h *HistoryFile) Interval(results.Interval) error { return nil }

// Event writes the history events' lines, and ends the file at
// EventHistoryEnd.
func (h *HistoryFile) Event(e Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch e.Kind {
	case EventHistoryStart:
		hd := *e.Header
		hd.Run = strings.TrimSuffix(filepath.Base(h.path), results.HistoryExt)
		h.buf = appendHeader(h.buf[:0], hd)
		h.write(h.buf)
	case EventHistory:
		h.write(e.History)
	case EventHistoryEnd:
		h.write(e.History)
		if h.err == nil {
			h.err = h.bw.Flush()
		}
		if h.err == nil {
			h.err = compress(h.f, h.path)
		}
		h.ended = true
	}
}

func (h *HistoryFile) write(b []byte) {
	if h.err == nil && !h.ended {
		_, h.err = h.bw.Write(b)
	}
}

// Close removes path.part, and path too unless the run ended the
// history: a run that failed leaves none. Its error is the first the
// writing met.
func (h *HistoryFile) Close() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	err := errors.Join(h.err, h.f.Close(), os.Remove(h.path+partExt))
	if !h.ended {
		err = nil
		if rmErr := os.Remove(h.path); rmErr != nil && !errors.Is(rmErr, os.ErrNotExist) {
			err = rmErr
		}
	}
	if err != nil {
		return fmt.Errorf("history: %w", err)
	}
	return nil
}

// partExt ends the name of a history being written.
const partExt = ".part"

// compress writes what f holds, from its start, zstd-compressed into path.
func compress(f *os.File, path string) error {
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	out, err := os.Create(path)
	if err != nil {
		return err
	}
	zw, err := zstd.NewWriter(out)
	if err != nil {
		out.Close()
		return err
	}
	_, err = io.Copy(zw, f)
	return errors.Join(err, zw.Close(), out.Close())
}
