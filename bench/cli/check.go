package cli

import (
	"context"
	"encoding/json"
	"errors"

	"fmt"
	"io"
	"os"
	"time"

	judge "github.com/lockbench/lockbench/check"
)

// ErrDisagree is `lockbench check`'s verdict when the history and
// summary.json disagree on a count (or the exclusion check contradicts
// the store); the command exits 5.
var ErrDisagree = errors.New("the history and summary.json disagree")

// checkOptions is `lockbench check`'s input.
type checkOptions struct {
	dir    string
	opt    judge.Options
	asJSON bool
}

func parseCheck(args []string, stdout, stderr io.Writer) (checkOptions, error) {
	var o checkOptions
	fs := newFlagSet("check", stderr)
	fs.IntVar(&o.opt.MaxKeys, "max-keys", judge.DefaultMaxKeys, "most lock keys checked for exclusion per run, 1..")
	fs.IntVar(&o.opt.MaxOpsPerKey, "max-ops-per-key", judge.DefaultMaxOpsPerKey, "most operations in one exclusion check, 2..")
	fs.DurationVar(&o.opt.KeyTimeout, "key-timeout", judge.DefaultKeyTimeout, "time the exclusion check may spend on one key")
	fs.DurationVar(&o.opt.Timeout, "timeout", judge.DefaultTimeout, "time the exclusion check may spend on one run")
	fs.BoolVar(&o.asJSON, "json", false, "print, per run, the figures the history derives beside its rows' (JSON), instead of the lines")
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		return o, parseFlags(fs, args, stdout) // its usage error, or help
	}
	switch {
	case o.opt.MaxKeys < 1:
		return o, usageErr("--max-keys: want 1 or more, got %d", o.opt.MaxKeys)
	case o.opt.MaxOpsPerKey < 2:
		return o, usageErr("--max-ops-per-key: want 2 or more, got %d", o.opt.MaxOpsPerKey)
	case o.opt.KeyTimeout <= 0 || o.opt.KeyTimeout > time.Hour:
		return o, usageErr("--key-timeout: want a duration above 0 and up to 1h, got %s", o.opt.KeyTimeout)
	case o.opt.Timeout <= 0 || o.opt.Timeout > 24*time.Hour:
		return o, usageErr("--timeout: want a duration above 0 and up to 24h, got %s", o.opt.Timeout)
	case fs.NArg() != 1:
		return o, usageErr("check: want exactly one run directory, got %d arguments", fs.NArg())
	}
	o.dir = fs.Arg(0)
	if st, err := os.Stat(o.dir); err != nil || !st.IsDir() {
		return o, usageErr("check: %q is not a run directory", o.dir)
	}
	return o, nil
}

// runCheck is `lockbench check DIR`: the second judge (package check).
func runCheck(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parseCheck(args, stdout, stderr)
	if err != nil {
		return err
	}
	lines := stdout
	if o.asJSON {
		lines = io.Discard
	}
	rep, err := judge.Dir(ctx, o.dir, o.opt, lines)
	if o.asJSON && (err == nil || errors.Is(err, judge.ErrUnreadable)) {
		if jerr := writeCheckJSON(stdout, rep); jerr != nil {
			return jerr
		}
	}
	if err != nil {
		return err
	}
	if n := rep.Disagreements(); n > 0 {
		return fmt.Errorf("%w: %d disagreements (above)", ErrDisagree, n)
	}
	return nil
}

// checkRunJSON is one run as `check --json` prints it: the history's
// figures beside its rows'.
type checkRunJSON struct {
	ID            string             `json:"id"`
	History       string             `json:"history,omitempty"`
	Error         string             `json:"error,omitempty"`
	Derived       *judge.Counts      `json:"derived,omitempty"`
	Judgement     *judge.Judgement   `json:"judgement,omitempty"`
	Rows          []judge.RowFigures `json:"rows,omitempty"`
	Disagreements []string           `json:"disagreements"`
	Notes         []string           `json:"notes,omitempty"`
}

// writeCheckJSON prints rep as a JSON array, one object per run.
func writeCheckJSON(w io.Writer, rep judge.Report) error {
	out := make([]checkRunJSON, 0, len(rep.Runs))
	for i := range rep.Runs {
		r := &rep.Runs[i]
		j := checkRunJSON{ID: r.ID, History: r.History, Rows: r.Rows, Notes: r.Notes, Disagreements: []string{}}
		if r.Err != nil {
			j.Error = r.Err.Error()
		} else if r.History != "" {
			j.Derived, j.Judgement = &r.Counts, &r.Derived
		}
		for _, d := range r.Disagreements {
			j.Disagreements = append(j.Disagreements, d.String())
		}
		out = append(out, j)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
