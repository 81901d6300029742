// The input of `lockbench verdicts`: its flags, and the flags it shares
// with `lockbench matrix` (cellFlags), which both register, parse and check
// here. The cells are experiments.go; running them, verdicts_run.go; the
// tables, verdicts_table.go.

package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/lockbench/lockbench/faults"
	"github.com/lockbench/lockbench/loadgen"
	"github.com/lockbench/lockbench/servers"
)

// verdictsOptions are the parsed and checked input of `lockbench verdicts`.
type verdictsOptions struct {
	cellOptions
	asJSON, failOnUnsafe bool
}

// parseVerdicts parses and checks the input of `lockbench verdicts` and
// builds its cells, starting nothing.
func parseVerdicts(args []string, stdout, stderr io.Writer) (o verdictsOptions, err error) {
	fs := newFlagSet("verdicts", stderr)
	var cf cellFlags
	cf.register(fs, "verdicts", cellHelp{
		strategy: "comma-separated strategies (see `lockbench strategies`), or all",
		fault:    "comma-separated faults, or all: " + strings.Join(faults.Names(), ", ") + "; or one NAME:key=value,… (schedule=random,every=1s)",
		dryRun:   "print the cells that would run, with an estimated time, and run nothing",
	})
	asJSON := fs.Bool("json", false, "print verdicts.json to stdout instead of the table")
	failOnUnsafe := fs.Bool("fail-on-unsafe", false, "exit 3 when any strategy lost safety (for CI)")
	if err := cf.parse(fs, args, stdout); err != nil {
		return o, err
	}
	infos, err := parseStrategies(*cf.strategy)
	if err != nil {
		return o, err
	}
	faultNames, err := parseFaults(cf.fault.list())
	if err != nil {
		return o, err
	}
	cases, err := verdictCases(infos, faultNames)
	if err != nil {
		return o, err
	}
	if len(cases) == 0 {
		return o, usageErr("--fault: none of %s applies to %s", strings.Join(faultNames, ", "), namesOf(infos))
	}
	_, pgSync, err := cf.ef.pgLayout()
	if err != nil {
		return o, err
	}
	co, err := cf.options(variantCases(cases, cf.ef.wait, pgSync))
	if err != nil {
		return o, err
	}
	return verdictsOptions{cellOptions: co, asJSON: *asJSON, failOnUnsafe: *failOnUnsafe}, nil
}

// parseFaults checks the --fault values against the registry: each a
// spec with parameters (NAME:key=value,…, kept whole), or a comma list of
// bare names, or all.
func parseFaults(values []string) ([]string, error) {
	var out []string
	for _, v := range values {
		switch {
		case strings.Contains(v, ":"):
			if _, err := faults.Parse(v); err != nil {
				return nil, err
			}
			out = append(out, v)
		case v == "all":
			out = append(out, faults.Names()...)
		default:
			names, err := parseList("fault", v, strings.Join(faults.Names(), ", ")+", or all", func(n string) error {
				if _, ok := faults.Lookup(n); !ok {
					return fmt.Errorf("unknown fault %q", n)
				}
				return nil
			})
			if err != nil {
				return nil, err
			}
			out = append(out, names...)
		}
	}
	return out, nil
}

// cellFlags are the flags of the commands that run verdict cells
// (verdicts, matrix): the servers, the metrics endpoint, which strategies
// and faults, the run directory, trials, lanes, seed and --dry-run.
type cellFlags struct {
	ef       endpointFlags
	mf       metricsFlag
	strategy *string
	fault    *faultValues
	out      *string
	resume   *string
	force    *bool
	trials   *int
	lanes    *int
	seed     *int64
	dryRun   *bool
	history  *bool
	mode     loadgen.InstanceMode
}

// cellHelp is the help of the shared flags whose wording is the command's
// own.
type cellHelp struct {
	strategy, fault, dryRun string
}

// register registers the shared flags on fs for command (the name its run
// directory takes).
func (cf *cellFlags) register(fs *flag.FlagSet, command string, help cellHelp) {
	cf.ef.register(fs)
	cf.mf.register(fs)
	cf.strategy = fs.String("strategy", "all", help.strategy)
	cf.fault = faultsFlag(fs, "all", help.fault)
	cf.out = fs.String("out", "", "run directory (default out/"+command+"-DATE-TIME)")
	cf.resume = fs.String("resume", "", "continue the interrupted `DIR` of the same "+command+" command line: run only the runs it does not hold yet, then draw the report")
	cf.force = fs.Bool("force", false, "with --resume: continue it with this command line, dropping the runs of cells it does not name")
	cf.trials = trialsFlag(fs)
	cf.history = historyFlag(fs)
	fs.Func("instance-mode", "process: run every cell's instances as OS processes, not only the cells that need them (default: each cell's own mode)", func(v string) error {
		mode := loadgen.InstanceMode(v)
		if mode != loadgen.InstanceProcess {
			return errors.New("want process (cells that can run as goroutines do by default)")
		}
		cf.mode = mode
		return nil
	})
	cf.lanes = lanesFlag(fs)
	cf.seed = seedFlag(fs)
	cf.dryRun = fs.Bool("dry-run", false, help.dryRun)
}

// parse parses args into fs, on which register put the shared flags, and
// checks --lanes against the servers given.
func (cf *cellFlags) parse(fs *flag.FlagSet, args []string, stdout io.Writer) error {
	if err := parseFlags(fs, args, stdout); err != nil {
		return err
	}
	switch {
	case *cf.force && *cf.resume == "":
		return usageErr("--force: only with --resume DIR")
	case *cf.resume != "" && *cf.out != "" && filepath.Clean(*cf.out) != filepath.Clean(*cf.resume):
		return usageErr("--resume: the run directory is %s; --out names another (%s)", *cf.resume, *cf.out)
	}
	return checkLanes(*cf.lanes, cf.ef)
}

// cellOptions are the parsed and checked input verdicts and matrix share.
type cellOptions struct {
	ef      endpointFlags
	mf      metricsFlag
	cases   []cell
	out     string
	resume  string
	force   bool
	dryRun  bool
	trials  int
	lanes   int
	seed    int64
	history bool
}

// openSession starts the servers the cells need and serves the metrics,
// for the run directory dir (resumed: on servers of the same kinds and
// versions), which it tells where the runs' files go.
func (o cellOptions) openSession(ctx context.Context, dir *runDir, need servers.Needs, opts servers.Options, stderr io.Writer) (*session, error) {
	sess, err := openSession(ctx, o.ef, need, opts, stderr)
	if err != nil {
		return nil, err
	}
	if err := sess.serveMetrics(o.mf); err != nil {
		sess.Close()
		return nil, err
	}
	if err := dir.checkServers(ctx, sess); err != nil {
		sess.Close()
		return nil, err
	}
	dir.describe(ctx, sess, o.trials, o.seed, o.history)
	return sess, nil
}

// options gives every cell the seed, checks the servers given and that
// they can serve the cells, and returns the shared input.
func (cf *cellFlags) options(cases []cell) (cellOptions, error) {
	for i := range cases {
		cases[i].sc.Seed = *cf.seed
		if cf.mode != "" {
			cases[i].sc.InstanceMode = cf.mode
		}
	}
	if _, err := cf.ef.endpoints(); err != nil {
		return cellOptions{}, err
	}
	if err := cf.ef.checkSequencedCells(cases); err != nil {
		return cellOptions{}, err
	}
	return cellOptions{ef: cf.ef, mf: cf.mf, cases: cases, out: *cf.out, resume: *cf.resume, force: *cf.force, dryRun: *cf.dryRun,
		trials: *cf.trials, lanes: *cf.lanes, seed: *cf.seed, history: *cf.history}, nil
}
