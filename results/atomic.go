package results

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"

	"github.com/lockbench/lockbench/internal/atomicfile"
)

// WriteFileAtomic is atomicfile.Write with this package's error: a reader
// (or an interrupted run) sees either the old file or the new one, never
// half of one. A failure is a *WriteError.
func WriteFileAtomic(path string, write func(io.Writer) error) error {
	if err := atomicfile.Write(path, write); err != nil {
		return &WriteError{Path: path, Err: err}
	}
	return nil
}

// WriteError is a file of a run directory that could not be written.
type WriteError struct {
	Path string
	Err  error
}

func (e *WriteError) Error() string { return "results: " + e.Err.Error() }
func (e *WriteError) Unwrap() error { return e.Err }

// Kind names the file's kind for people: "chart", "interval log",
// "history", or the file's own name (summary.json, report.html, …).
func (e *WriteError) Kind() string {
	base := filepath.Base(e.Path)
	switch {
	case strings.HasSuffix(base, ".png"), strings.HasSuffix(base, ".svg"):
		return "chart"
	case strings.HasSuffix(base, ".hlog"):
		return "interval log"
	case strings.HasSuffix(base, HistoryExt):
		return "history"
	}
	return base
}

// cause is the innermost error of e: "no space left on device".
func (e *WriteError) cause() string {
	err := e.Err
	for {
		next := errors.Unwrap(err)
		if next == nil {
			return err.Error()
		}
		err = next
	}
}

// WriteFailures splits err into the files it could not write, one line per
// kind of file and cause ("could not write 2 charts in DIR (no space left
// on device): a.png, b.png"), and the rest of err (nil when there is none).
// err may be a tree of joined and wrapped errors; a branch that holds a
// WriteError is taken as its write failures.
func WriteFailures(err error) (lines []string, rest error) {
	var writes []*WriteError
	var others []error
	var walk func(err error)
	walk = func(err error) {
		switch we, ok := err.(*WriteError); {
		case err == nil:
		case ok:
			writes = append(writes, we)
		case isJoin(err):
			for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
				walk(e)
			}
		case hasWriteError(err):
			// A wrapped write failure, or a wrapped join holding some:
			// the wrapping text is dropped, the errors beside them kept.
			walk(errors.Unwrap(err))
		default:
			others = append(others, err)
		}
	}
	walk(err)
	if len(writes) == 0 {
		return nil, err
	}
	type group struct {
		kind, cause string
		dirs, files []string
	}
	var groups []*group
	for _, w := range writes {
		k, c := w.Kind(), w.cause()
		i := slices.IndexFunc(groups, func(g *group) bool { return g.kind == k && g.cause == c })
		if i < 0 {
			groups = append(groups, &group{kind: k, cause: c})
			i = len(groups) - 1
		}
		g := groups[i]
		if d := filepath.Dir(w.Path); !slices.Contains(g.dirs, d) {
			g.dirs = append(g.dirs, d)
		}
		g.files = append(g.files, filepath.Base(w.Path))
	}
	for _, g := range groups {
		what := g.kind
		if len(g.files) > 1 {
			what = fmt.Sprintf("%d %ss", len(g.files), g.kind)
		}
		where := strings.Join(g.dirs, ", ")
		if len(g.files) == 1 && g.kind == g.files[0] {
			lines = append(lines, fmt.Sprintf("could not write %s in %s: %s", what, where, g.cause))
			continue
		}
		lines = append(lines, fmt.Sprintf("could not write %s in %s (%s): %s", what, where, g.cause, strings.Join(g.files, ", ")))
	}
	return lines, errors.Join(others...)
}

func isJoin(err error) bool {
	_, ok := err.(interface{ Unwrap() []error })
	return ok
}

// hasWriteError reports whether err's tree holds a WriteError.
func hasWriteError(err error) bool {
	var we *WriteError
	return errors.As(err, &we)
}
