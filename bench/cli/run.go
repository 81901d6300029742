package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/lockbench/lockbench/bench/faults"
	"github.com/lockbench/lockbench/results"
)

// runRun is `lockbench run`: one scenario per strategy, fresh state each.
func runRun(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	fs := newFlagSet("run", stderr)
	var sf scenarioFlags
	var ef endpointFlags
	sf.register(fs)
	ef.register(fs)
	strategyList := fs.String("strategy", "all", "comma-separated strategies (see `lockbench strategies`), or all")
	out := fs.String("out", "", "run directory (default out/run-DATE-TIME)")
	asJSON := fs.Bool("json", false, "print summary.json to stdout instead of the table")
	failOnUnsafe := fs.Bool("fail-on-unsafe", false, "exit 3 when any strategy lost safety (for CI)")
	faultSpec := fs.String("fault", "none", "fault to inject: "+faultHelp())
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of lockbench itself to this file (to check the harness)")
	if err := parseFlags(fs, args, stdout); err != nil {
		return err
	}
	names, err := parseStrategies(*strategyList)
	if err != nil {
		return err
	}
	sc, err := sf.scenario()
	if err != nil {
		return err
	}
	if err := sf.storeFor(names, &sc); err != nil {
		return err
	}
	fspec, err := faults.Parse(*faultSpec)
	if err != nil {
		return err
	}
	if sc, err = fspec.Adjust(sc); err != nil {
		return err
	}
	if err := sc.Validate(); err != nil {
		return err
	}
	dir, err := newRunDir(*out, "run", args)
	if err != nil {
		return err
	}
	defer dir.closeAtExit(&err)
	sess, err := openSession(ctx, ef, needs(names, sc), fspec.ServerOptions(), stderr)
	if err != nil {
		return err
	}
	defer sess.Close()
	if *cpuProfile != "" {
		stop, err := startCPUProfile(*cpuProfile)
		if err != nil {
			return err
		}
		defer stop()
	}

	for _, name := range names {
		if ctx.Err() != nil {
			break
		}
		r, err := sess.run(ctx, name, sc, fspec)
		if err != nil {
			return err
		}
		if err := dir.add(r); err != nil {
			return err
		}
	}
	if err := dir.close(); err != nil {
		return err
	}
	sums := dir.summaries()
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(sums); err != nil {
			return err
		}
	} else {
		results.Table(stdout, sums)
		fmt.Fprintf(stdout, "\nrun directory: %s\n", dir.dir)
	}
	if ctx.Err() != nil {
		fmt.Fprintf(stderr, "interrupted: partial results in %s\n", dir.dir)
	}
	if *failOnUnsafe {
		for _, s := range sums {
			if s.Unsafe {
				return fmt.Errorf("%w: %s", ErrUnsafe, s.String())
			}
		}
	}
	return nil
}
