package check

import (
	"fmt"
	"io"
)

// maxWriteLines is the most DISAGREE lines about single writes printed
// per run: 10; a line says how many more there are.
const maxWriteLines = 10

// printRun writes the lines of run r (Dir's format) to out.
func printRun(out io.Writer, r *RunReport) error {
	pw := &printer{w: out}
	switch {
	case r.History == "":
		pw.printf("no history %s\n", r.ID)
		return pw.err
	case r.Err != nil:
		pw.printf("unreadable %s: %v\n", r.ID, r.Err)
		return pw.err
	case len(r.Disagreements) == 0:
		pw.printf("agree  %s\n", r.ID)
	}
	writes := 0
	for _, d := range r.Disagreements {
		if d.Field == FieldApplied {
			writes++
			if writes > maxWriteLines {
				continue
			}
		}
		pw.printf("DISAGREE %s: %s\n", r.ID, d)
	}
	if more := writes - maxWriteLines; more > 0 {
		pw.printf("DISAGREE %s: %s … and %s more\n", r.ID, FieldApplied, plural(more, "write"))
	}
	for _, n := range r.Notes {
		pw.printf("  %s\n", n)
	}
	return pw.err
}

// printer writes lines until the first error, which it keeps.
type printer struct {
	w   io.Writer
	err error
}

// printf writes one formatted line unless a write failed before.
func (p *printer) printf(format string, args ...any) {
	if p.err == nil {
		_, p.err = fmt.Fprintf(p.w, format, args...)
	}
}
