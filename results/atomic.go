package results

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// writeFileAtomic writes path through write into a temporary file in the
// same directory and renames it into place, so a reader (or an interrupted
// run) sees either the old file or the new one, never half of one.
func writeFileAtomic(path string, write func(io.Writer) error) (err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return fmt.Errorf("results: %w", err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	bw := bufio.NewWriter(f)
	if err = write(bw); err != nil {
		return fmt.Errorf("results: writing %s: %w", path, err)
	}
	if err = bw.Flush(); err != nil {
		return fmt.Errorf("results: writing %s: %w", path, err)
	}
	// CreateTemp makes the file 0600; the files of a run directory are
	// meant to be shared like any other output.
	if err = f.Chmod(0o644); err != nil {
		return fmt.Errorf("results: %w", err)
	}
	// No fsync: the rename is atomic for any reader and against an
	// interrupted process, which is what a run directory needs; syncing
	// hundreds of files between runs would only disturb the next run's
	// servers (Postgres shares the disk).
	if err = f.Close(); err != nil {
		return fmt.Errorf("results: %w", err)
	}
	if err = os.Rename(tmp, path); err != nil {
		return fmt.Errorf("results: %w", err)
	}
	return nil
}
