package results

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
)

// Write failures are told one line per kind of file and cause, whatever
// wraps and joins them; the other errors beside them are kept.
func TestWriteFailures(t *testing.T) {
	full := func(path string) error {
		return &WriteError{Path: path, Err: fmt.Errorf("writing %s: %w", path, &os.PathError{Op: "write", Path: path + ".tmp", Err: syscall.ENOSPC})}
	}
	other := errors.New("run 3 failed")
	err := fmt.Errorf("matrix: %w", errors.Join(
		full("/o/charts/a.png"), full("/o/charts/b.svg"),
		errors.Join(full("/o/report.html"), other),
		full("/o/hlog/x.acquire.hlog"),
	))
	lines, rest := WriteFailures(err)
	want := []string{
		"could not write 2 charts in /o/charts (no space left on device): a.png, b.svg",
		"could not write report.html in /o: no space left on device",
		"could not write interval log in /o/hlog (no space left on device): x.acquire.hlog",
	}
	if !slices.Equal(lines, want) {
		t.Errorf("lines:\n%q\nwant\n%q", lines, want)
	}
	if rest == nil || rest.Error() != other.Error() {
		t.Errorf("rest: got %v; want %v", rest, other)
	}
	if lines, rest := WriteFailures(other); lines != nil || rest != other {
		t.Errorf("no write failure: got %q, %v; want none, the error itself", lines, rest)
	}
	// A real one: a file under a path that is not a directory.
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "f"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	werr := WriteFileAtomic(filepath.Join(dir, "f", SummaryJSONFile), func(w io.Writer) error { return nil })
	if lines, _ := WriteFailures(werr); len(lines) != 1 {
		t.Errorf("WriteFileAtomic's failure: got %q; want one line", lines)
	}
}
