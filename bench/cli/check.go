package cli

import (
	"context"
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
	dir string
	opt judge.Options
}

func parseCheck(args []string, stdout, stderr io.Writer) (checkOptions, error) {
	var o checkOptions
	fs := newFlagSet("check", stderr)
	fs.IntVar(&o.opt.MaxKeys, "max-keys", judge.DefaultMaxKeys, "most lock keys checked for exclusion per run, 1..")
	fs.IntVar(&o.opt.MaxOpsPerKey, "max-ops-per-key", judge.DefaultMaxOpsPerKey, "most operations in one exclusion check, 2..")
	fs.DurationVar(&o.opt.KeyTimeout, "key-timeout", judge.DefaultKeyTimeout, "time the exclusion check may spend on one key")
	fs.DurationVar(&o.opt.Timeout, "timeout", judge.DefaultTimeout, "time the exclusion check may spend on one run")
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
	rep, err := judge.Dir(ctx, o.dir, o.opt, stdout)
	if err != nil {
		return err
	}
	if n := rep.Disagreements(); n > 0 {
		return fmt.Errorf("%w: %d disagreements (above)", ErrDisagree, n)
	}
	return nil
}
