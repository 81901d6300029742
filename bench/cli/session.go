package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/lockbench/lockbench/faults"
	"github.com/lockbench/lockbench/loadgen"
	"github.com/lockbench/lockbench/loadgen/agent"
	"github.com/lockbench/lockbench/loadgen/store"
	"github.com/lockbench/lockbench/results"
	"github.com/lockbench/lockbench/servers"
	"github.com/lockbench/lockbench/strategies"
)

// parseFlags parses args into fs. Errors become one usage line; -h prints
// the flags to stdout.
func parseFlags(fs *flag.FlagSet, args []string, stdout io.Writer) error {
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		fs.SetOutput(stdout)
		fmt.Fprintf(stdout, "usage of %s:\n", fs.Name())
		fs.PrintDefaults()
		return flag.ErrHelp
	}
	if err != nil {
		return flagUsageErr(fs, err)
	}
	if fs.NArg() > 0 {
		return usageErr("unexpected argument %q (flags go as --name value)", fs.Arg(0))
	}
	return nil
}

// flagUsageErr is the one usage line for a flag package error of fs: an
// unknown flag points to the command's -h, a bad boolean says what it
// takes; other errors name the flag and the value already.
func flagUsageErr(fs *flag.FlagSet, err error) error {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: "); ok {
		return usageErr("unknown flag %s (%s -h lists the flags)", name, fs.Name())
	}
	if rest, ok := strings.CutPrefix(msg, "invalid boolean value "); ok {
		if value, flagName, ok := strings.Cut(rest, " for "); ok {
			flagName, _, _ = strings.Cut(flagName, ":")
			return usageErr("%s: want true or false, got %s", flagName, value)
		}
	}
	return usageErr("%s", err)
}

// session is a set of servers (started or given) and a store, shared by the
// runs of one command.
type session struct {
	ep       servers.Endpoints
	cluster  *servers.Cluster
	stores   map[loadgen.StoreKind]store.Store
	stderr   io.Writer
	progress bool
	// live serves --metrics-addr (serveMetrics); nil when off.
	live *liveMetrics
	// trials is the command's trials per cell (runDir.describe).
	trials int
	// redisWait and redisWaitTimeout are the WAIT single-node Redis
	// strategies send on a replicated Redis (--redis-wait); verdicts sets
	// redisWait per cell.
	redisWait        int
	redisWaitTimeout time.Duration
	// streamDir is where a long run's intervals stream to as they close
	// (streamAfter; the run directory's hlog/, set by runDir.describe);
	// "" keeps every run's intervals in memory.
	streamDir string
	// historyDir, when set, is where each run's history goes
	// (loadgen.Options.History), named as the run's interval logs.
	historyDir string
	// runDir is the run directory, under whose adapters/ an adapter's
	// standard error goes (strategies.Config.RunDir); "" for none.
	runDir string
	// agents are the --agents sessions, where instance processes run; nil
	// without --agents.
	agents *agent.Pool
	// transport is --store-transport, for the runs whose instances are
	// processes, local or on agents ("" for the default, sync).
	transport string
	// pgTopology and pgSync are --pg-topology and --pg-sync: the
	// Postgres strategies' variant label says them (pg=replica,sync=on).
	pgTopology servers.PgTopology
	pgSync     bool
}

// streamAfter is the shortest --duration whose intervals stream to disk as
// they close instead of staying in memory: 1 minute, 240 intervals of
// 250ms, about 170 MB of histograms (four phases of about 180 KB each).
// Shorter runs keep them, for the charts drawn from memory.
const streamAfter = time.Minute

// openSession makes sure the servers the runs need exist: the user's
// (flags, then LOCKBENCH_* variables) or ones started on loopback.
func openSession(ctx context.Context, ef endpointFlags, need servers.Needs, opts servers.Options, stderr io.Writer) (*session, error) {
	given, err := ef.endpoints()
	if err != nil {
		return nil, err
	}
	opts.EtcdMembers = ef.etcdMembers
	opts.ZKMembers = ef.zkMembers
	opts.RedisAOF = ef.redisAOF
	if opts.RedisTopology, err = ef.topology(); err != nil {
		return nil, err
	}
	if opts.PgTopology, opts.PgSync, err = ef.pgLayout(); err != nil {
		return nil, err
	}
	var pool *agent.Pool
	if ef.agents != "" {
		if pool, opts.Host, err = openAgents(ctx, ef.agents, stderr); err != nil {
			return nil, err
		}
	}
	ep, cluster, err := servers.Ensure(ctx, need, given, opts)
	if err != nil {
		if pool != nil {
			_ = pool.Close()
		}
		return nil, fmt.Errorf("servers: %s", servers.Redact(err.Error()))
	}
	s := &session{ep: ep, cluster: cluster, stores: map[loadgen.StoreKind]store.Store{}, stderr: stderr,
		redisWait: ef.wait, redisWaitTimeout: ef.waitTimeout, agents: pool, transport: ef.transport,
		pgTopology: opts.PgTopology, pgSync: opts.PgSync}
	if f, ok := stderr.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		s.progress = true
	}
	return s, nil
}

// Close closes the stores and stops every server the session started.
func (s *session) Close() {
	s.closeMetrics()
	for _, st := range s.stores {
		_ = st.Close()
	}
	if s.cluster != nil {
		_ = s.cluster.Stop()
	}
	if s.agents != nil {
		_ = s.agents.Close()
	}
}

// target is what the session's servers give the strategy: the endpoints
// of the nodes it uses and, when lockbench started them, the nodes.
func (s *session) target(info strategies.Info) (servers.Target, error) {
	t, err := servers.TargetFor(info.Need, s.ep, s.cluster)
	if err != nil {
		return t, errors.New(servers.Redact(err.Error()))
	}
	return t, nil
}

func (s *session) store(ctx context.Context, kind loadgen.StoreKind) (store.Store, error) {
	if st, ok := s.stores[kind]; ok {
		return st, nil
	}
	var st store.Store = store.NewMemory()
	if kind == "postgres" {
		pg, err := store.NewPostgres(ctx, s.ep.PostgresDSN)
		if err != nil {
			return nil, fmt.Errorf("postgres store: %s", servers.Redact(err.Error()))
		}
		st = pg
	}
	s.stores[kind] = st
	return st, nil
}

// runHistory is a run's history file in the run directory.
type runHistory struct {
	*loadgen.HistoryFile
	dir, path string
}

// keepHistory makes o keep its history in the session's run directory,
// named as the run's interval logs; nil when the session keeps none.
func (s *session) keepHistory(o *loadgen.Options, faultName string, trial int) (*runHistory, error) {
	if s.historyDir == "" {
		return nil, nil
	}
	id := (&results.Summary{Strategy: o.Strategy.Name, Scenario: o.Scenario.Name, Fault: faultName, Variant: o.Scenario.Variant,
		Fencing: o.Scenario.Fencing && o.Strategy.Fencing, Trial: trial}).ID()
	h := &runHistory{dir: s.historyDir, path: freeHistoryPath(s.historyDir, id)}
	var err error
	if h.HistoryFile, err = loadgen.NewHistoryFile(h.path); err != nil {
		return nil, err
	}
	o.History, o.Reporter = true, loadgen.Tee(o.Reporter, h.HistoryFile)
	return h, nil
}

// end closes the history of a run that ended with err, and renames it if
// the run's summary names the run otherwise.
func (h *runHistory) end(run results.Run, err error) error {
	if h == nil {
		return err
	}
	if err = errors.Join(err, h.Close()); err != nil {
		return err
	}
	if _, err := os.Stat(h.path); errors.Is(err, os.ErrNotExist) {
		return nil // the run broke before its history began
	}
	if id := run.Summary.ID(); !strings.HasPrefix(filepath.Base(h.path), id+".") {
		return os.Rename(h.path, freeHistoryPath(h.dir, id))
	}
	return nil
}

// run runs trial (1-based) of one strategy through one scenario under one
// fault (the zero Spec, or none: no fault), built on the servers the
// strategy uses.
func (s *session) run(ctx context.Context, info strategies.Info, sc loadgen.Scenario, spec faults.Spec, trial int) (results.Run, error) {
	name := info.Name
	target, err := s.target(info)
	if err != nil {
		return results.Run{}, fmt.Errorf("%s: %w", name, err)
	}
	fault, err := spec.New(target)
	if err != nil {
		return results.Run{}, err
	}
	st, err := s.store(ctx, sc.Store)
	if err != nil {
		return results.Run{}, err
	}
	if err := s.cluster.SetPgSync(ctx, s.pgSync); err != nil {
		return results.Run{}, fmt.Errorf("%s: %w", name, err)
	}
	lock, sc := s.lockOf(info, target, sc)
	o := loadgen.Options{Strategy: info, Scenario: sc, Lock: lock, Store: st, Fault: fault}
	if s.agents != nil {
		o.Spawner = s.agents // sc's instances are processes (trialScenario)
	}
	faultName := results.FaultNone
	if s.trials <= 1 {
		trial = 0 // one trial a cell: none to name
	}
	if fault != nil {
		faultName = fault.Name()
	}
	if o.Scenario.InstanceMode == loadgen.InstanceProcess {
		o.StoreTransport = s.transport
		o.Reporter = loadgen.Events(func(e loadgen.Event) {
			if e.Kind == loadgen.EventFallback {
				s.fellBack(name, faultName, e.Why)
			}
		})
	}
	bar := s.progressBar(&o, name, fault, trial)
	var stream *results.HlogStream
	if s.streamDir != "" && sc.Duration >= streamAfter {
		if stream, err = results.NewHlogStream(s.streamDir); err != nil {
			return results.Run{}, err
		}
		o.Reporter, o.StreamIntervals = loadgen.Tee(o.Reporter, loadgen.Intervals(stream.Write)), true
	}
	hist, err := s.keepHistory(&o, faultName, trial)
	if err != nil {
		return results.Run{}, err
	}
	endMetrics := s.observe(&o, faultName, trial)
	run, err := loadgen.Run(ctx, o)
	run.Summary.Unjudged = servers.Redact(run.Summary.Unjudged) // a broken start's cause
	if err != nil {
		endMetrics("")
	} else {
		endMetrics(run.Summary.Verdict)
	}
	err = hist.end(run, err)
	if stream != nil {
		if err != nil {
			_ = stream.Close()
		} else {
			run.Log = stream // closed by the run directory, once written
		}
	}
	if bar != nil {
		_ = bar.Finish()
	}
	if err != nil {
		return run, fmt.Errorf("%s: %s", name, servers.Redact(err.Error()))
	}
	if info.Control && run.Summary.UnsafeCount() == 0 && ctx.Err() == nil {
		s.controlSafe(name, faultName)
	}
	return run, nil
}

// progressBar, when the session shows progress, is the run's bar on
// stderr, fed by the run's progress (one more of o's Reporters); nil
// otherwise.
func (s *session) progressBar(o *loadgen.Options, name string, fault loadgen.Fault, trial int) *progressbar.ProgressBar {
	if !s.progress {
		return nil
	}
	sc := o.Scenario
	label := name
	if fault != nil {
		label += " / " + fault.Name()
	}
	if trial > 0 {
		label += fmt.Sprintf(" trial %d/%d", trial, s.trials)
	}
	// A --duration run without a rate has no payment count to count up
	// to: a spinner with the count.
	total := int64(sc.Payments)
	if sc.Payments <= 0 {
		total = -1
	}
	bar := progressbar.NewOptions64(total,
		progressbar.OptionSetWriter(s.stderr),
		progressbar.OptionSetDescription(label),
		progressbar.OptionShowCount(),
		progressbar.OptionSetWidth(20),
		progressbar.OptionClearOnFinish(),
	)
	o.Reporter = loadgen.Tee(o.Reporter, loadgen.Events(func(e loadgen.Event) {
		if e.Kind != loadgen.EventProgress {
			return
		}
		p := e.Progress()
		bar.Describe(fmt.Sprintf("%-14s %7.0f pay/s  p99 %-8s unsafe %d", label, p.RatePerS, p.P99.Round(time.Microsecond), p.UnsafeNow))
		_ = bar.Set64(p.Offered)
	}))
	return bar
}

// controlSafe warns that the control strategy name came out safe (under
// fault): no two holders of one payment overlapped, so the scenario could
// not have shown a missing lock, and the other strategies' SAFE beside it
// says little. Critical sections with no work are the usual cause: at
// --hold 0 in-process instances finish a cycle in a microsecond.
func (s *session) controlSafe(name, fault string) {
	under := ""
	if fault != results.FaultNone {
		under = " under " + fault
	}
	fmt.Fprintf(s.stderr, "lockbench: warning: the control %s came out SAFE%s: no two deliveries of a payment overlapped, so this scenario cannot show a missing lock, and SAFE beside it means little; give the critical section work (--hold) or run more payments\n", name, under)
}

// fellBack says that a run of strategy name (under fault) that asked for
// the sequenced store transport runs sync, and why: one line a run.
func (s *session) fellBack(name, fault, why string) {
	under := ""
	if fault != results.FaultNone {
		under = " under " + fault
	}
	fmt.Fprintf(s.stderr, "lockbench: %s%s: store transport sync, not sequenced: %s\n", name, under, why)
}

// lockOf is what a run of the strategy uses beyond its target: WAIT on a
// replicated Redis, the strict fencing rule for a fenced strategy
// (store.Setup.Strict, which loadgen.Run sets), and the variant label that says so
// ("topology=sentinel,wait=1", "fencing=strict").
func (s *session) lockOf(info strategies.Info, target servers.Target, sc loadgen.Scenario) (strategies.Config, loadgen.Scenario) {
	lock := target.Config
	lock.RunDir = s.runDir
	var parts []string
	if sc.Variant != "" {
		parts = append(parts, sc.Variant)
	}
	if target.Replicated() && info.Need.Backend == strategies.BackendRedis {
		parts = append(parts, "topology="+string(servers.TopologySentinel))
		if s.redisWait > 0 {
			lock.RedisWait, lock.RedisWaitTimeout = s.redisWait, s.redisWaitTimeout
			parts = append(parts, fmt.Sprintf("wait=%d", s.redisWait))
		}
	}
	if s.pgTopology == servers.PgReplica && info.Need.Backend == strategies.BackendPostgres {
		parts = append(parts, "pg="+string(servers.PgReplica))
		if s.pgSync {
			parts = append(parts, "sync=on")
		}
	}
	if sc.FencingStrict && sc.Fencing && info.Fencing {
		parts = append(parts, "fencing=strict")
	}
	sc.Variant = strings.Join(parts, ",")
	return lock, sc
}

// applicableCells drops the cells the session's servers cannot serve,
// saying why on w: a usage error when a fault spec has none left.
func (s *session) applicableCells(cells []cell, w io.Writer) ([]cell, error) {
	var keep []cell
	var why []string
	left := map[string]int{} // cells left per fault spec
	whyOf := map[string][]string{}
	for _, c := range cells {
		spec := specString(c.spec)
		if reason := s.notApplicable(c); reason != "" {
			why = append(why, c.info.Name+": "+reason)
			whyOf[spec] = append(whyOf[spec], c.info.Name+": "+reason)
			continue
		}
		left[spec]++
		keep = append(keep, c)
	}
	for _, line := range why {
		fmt.Fprintln(w, "not applicable, not run:", line)
	}
	for _, c := range cells {
		if spec := specString(c.spec); left[spec] == 0 {
			return nil, usageErr("--strategy: %s", strings.Join(whyOf[spec], "; "))
		}
	}
	return keep, nil
}

// freeHistoryPath is where the history of a run named id goes in dir: its
// ID, or, when an earlier run of the directory had the same ID (a sweep's
// points), ID.2, ID.3, … as results.FileIDs names their interval logs.
func freeHistoryPath(dir, id string) string {
	path := filepath.Join(dir, id+results.HistoryExt)
	for k := 2; ; k++ {
		_, done := os.Stat(path)
		_, writing := os.Stat(path + ".part") // a run of another lane's, under way
		if errors.Is(done, fs.ErrNotExist) && errors.Is(writing, fs.ErrNotExist) {
			return path
		}
		path = filepath.Join(dir, id+"."+strconv.Itoa(k)+results.HistoryExt)
	}
}
