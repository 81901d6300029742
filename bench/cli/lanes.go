package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lockbench/lockbench/results"
	"github.com/lockbench/lockbench/servers"
	"github.com/lockbench/lockbench/strategies"
)

// maxLanes bounds --lanes: 8 sets of servers at once.
const maxLanes = 8

// lanesFlag registers --lanes: how many independent sets of servers the
// verdict cells run on at once.
func lanesFlag(fs *flag.FlagSet) *int {
	n := 1
	fs.Func("lanes", fmt.Sprintf("run the verdict cells on this many independent sets of servers at once, 1..%d (default 1): each lane starts servers of its own, so a fault in one lane touches none of the others' (needs servers lockbench starts)", maxLanes), func(v string) error {
		l, err := strconv.Atoi(v)
		if err != nil || l < 1 || l > maxLanes {
			return fmt.Errorf("want a number of lanes 1..%d", maxLanes)
		}
		n = l
		return nil
	})
	return &n
}

// checkLanes refuses more than one lane with servers someone else runs:
// the lanes' faults would kill, partition and move the clocks of the same
// servers under one another's runs.
func checkLanes(lanes int, ef endpointFlags) error {
	if lanes <= 1 {
		return nil
	}
	given, err := ef.endpoints()
	if err != nil {
		return err
	}
	if kinds := givenKinds(given); len(kinds) > 0 {
		return usageErr("--lanes: each lane starts servers of its own; with servers given (%s) run one lane", strings.Join(kinds, ", "))
	}
	return nil
}

// givenKinds names the kinds of server e points at.
func givenKinds(e servers.Endpoints) []string {
	var kinds []string
	add := func(given bool, kind string) {
		if given {
			kinds = append(kinds, kind)
		}
	}
	add(len(e.RedisAddrs) > 0 || len(e.RedisSentinels) > 0, "Redis")
	add(len(e.EtcdEndpoints) > 0, "etcd")
	add(e.PostgresDSN != "", "Postgres")
	add(len(e.ZKServers) > 0, "ZooKeeper")
	add(e.NATSURL != "", "NATS")
	add(e.MySQLDSN != "", "MariaDB")
	return kinds
}

// openLanes returns sess and lanes − 1 more sessions like it, each with
// servers of its own, started one after another (their start-up is mostly
// waiting, but Postgres' initdb and ZooKeeper's JVM each take a core for a
// moment); close stops the extra lanes' servers. Every lane shares sess's
// live metrics.
func openLanes(ctx context.Context, sess *session, ef endpointFlags, need servers.Needs, opts servers.Options, lanes int, stderr io.Writer) (all []*session, close func(), err error) {
	all = []*session{sess}
	close = func() {
		for _, s := range all[1:] {
			s.live = nil // the first lane's to close
			s.Close()
		}
	}
	for i := 1; i < lanes; i++ {
		s, err := openSession(ctx, ef, need, opts, stderr)
		if err != nil {
			close()
			return nil, func() {}, fmt.Errorf("lane %d: %w", i+1, err)
		}
		s.live, s.trials, s.progress = sess.live, sess.trials, false
		s.streamDir, s.historyDir, s.runDir = sess.streamDir, sess.historyDir, sess.runDir
		all = append(all, s)
	}
	if lanes > 1 {
		sess.progress = false // one bar per lane would garble the terminal
		fmt.Fprintf(stderr, "%d lanes: the verdict cells run %d at a time, each lane on servers of its own\n", lanes, lanes)
	}
	return all, close, nil
}

// verdictRun is one run of runCases: a cell's trial, numbered in the order
// the runs are listed.
type verdictRun struct {
	c      cell
	trial  int
	n      int
	label  string
	result results.Run
	ok     bool
}

// runCases runs the verdict cells into dir, trials times each (trial k of
// every cell before trial k+1 of any), spread over the lanes: each lane
// takes the next run when it is free. It skips, listing them, the cells
// that cannot run on the session's servers (notApplicable) and those whose
// fault needs servers lockbench starts when they were given; failed lists
// the runs that returned an error (the others still run). With several
// lanes the runs finish in any order; dir lists them in the order of one
// lane when all are done, so the files do not depend on the lanes.
func runCases(ctx context.Context, lanes []*session, dir *runDir, cases []cell, trials int, stderr io.Writer) (skipped, failed []string, err error) {
	total := len(cases) * trials
	todo, skipped, held := casesToRun(lanes[0], dir, cases, trials)
	if dir.resumed {
		fmt.Fprintf(stderr, "resume: %s holds %d of the %d fault runs; running the other %d\n", dir.dir, held, held+len(todo), len(todo))
	}
	first := len(dir.runs)
	var mu sync.Mutex // dir, failed, err and stderr
	one := func(s *session, v *verdictRun) {
		s.redisWait, s.pgSync = v.c.wait, v.c.pgSync
		t0 := time.Now()
		r, rerr := runTrial(ctx, s, v.c.info, v.c.sc, v.c.spec, v.trial)
		mu.Lock()
		defer mu.Unlock()
		if rerr != nil && ctx.Err() != nil {
			// Interrupted: said once, when the command ends, not as a
			// failure of each run it cut short.
			return
		}
		if rerr != nil {
			failed = append(failed, fmt.Sprintf("%s: %v", v.label, rerr))
			fmt.Fprintf(stderr, "[%d/%d] %s: error: %v\n", v.n, total, v.label, rerr)
			return
		}
		if aerr := dir.add(r); aerr != nil && err == nil {
			err = aerr
		}
		// The run as dir keeps it: its summary alone, once on disk.
		v.result, v.ok = dir.runs[len(dir.runs)-1], true
		sm := r.Summary
		why := ""
		if sm.Unknown() {
			why = ": " + sm.Unjudged
		}
		fmt.Fprintf(stderr, "[%d/%d] %s: %s (duplicates %d, overlaps %d, stale rejected %d, availability %.0f%%) in %s%s\n",
			v.n, total, v.label, sm.Label(), sm.Duplicates, sm.Overlaps, sm.StaleRejected, 100*sm.Availability, time.Since(t0).Round(100*time.Millisecond), why)
	}
	stop := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return ctx.Err() != nil || err != nil
	}
	next := make(chan *verdictRun)
	var wg sync.WaitGroup
	for _, s := range lanes {
		wg.Go(func() {
			for v := range next {
				if !stop() { // a run handed over as the command ended is not run
					one(s, v)
				}
			}
		})
	}
	for _, v := range todo {
		if stop() {
			break
		}
		next <- v
	}
	close(next)
	wg.Wait()
	if err != nil || len(lanes) == 1 {
		return skipped, failed, err
	}
	return skipped, failed, inOrder(dir, first, todo)
}

// casesToRun lists the runs of cases' trials still to make, trial by
// trial, numbered as the progress lines count them: those the session's
// servers can serve (the others are skipped, said once each), and not
// held by a directory resumed (held counts those).
func casesToRun(sess *session, dir *runDir, cases []cell, trials int) (todo []*verdictRun, skipped []string, held int) {
	n := 0
	for trial := 1; trial <= trials; trial++ {
		for _, c := range cases {
			n++
			label := c.label()
			if trials > 1 {
				label += fmt.Sprintf(" trial %d", trial)
			}
			if why := sess.notApplicable(c); why != "" {
				if trial == 1 {
					skipped = append(skipped, notApplicablePrefix+c.label()+": "+why)
				}
				continue
			}
			if why := sess.faultRefused(c); why != "" {
				if trial == 1 {
					skipped = append(skipped, c.label()+": "+why)
				}
				continue
			}
			if _, ok := dir.match.done(c.info.Name, trial, paramsOf(trialScenario(sess, c.sc, trial), c.spec), c.sc.Variant, c.wait); ok {
				held++
				continue
			}
			todo = append(todo, &verdictRun{c: c, trial: trial, n: n, label: label})
		}
	}
	return todo, skipped, held
}

// faultRefused says why the session's servers cannot take cell c's fault
// (a node fault on servers lockbench did not start, or on a strategy with
// no server); "" when they can.
func (s *session) faultRefused(c cell) string {
	switch {
	case !c.spec.NeedsLocal() || s.hasLocal(c.info):
		return ""
	case c.info.Need.Backend == strategies.BackendNone:
		return c.info.Name + " has no server for the fault to act on"
	}
	return "the fault needs servers lockbench starts itself"
}

// inOrder lists dir's runs from first on in the order of todo, as one lane
// would have run them, and writes the data files again.
func inOrder(dir *runDir, first int, todo []*verdictRun) error {
	var done []results.Run
	for _, v := range todo {
		if v.ok {
			done = append(done, v.result)
		}
	}
	if len(done) != len(dir.runs)-first {
		// Every run added is in todo: a mismatch is a bug, not a result.
		return errors.New("verdicts: the lanes' runs do not add up")
	}
	copy(dir.runs[first:], done)
	return results.WriteData(dir.dir, dir.runs, dir.meta)
}
