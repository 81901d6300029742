package conformance

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/lockbench/lockbench/servers"
	"github.com/lockbench/lockbench/strategies"
)

// Env says where the servers are and, for servers the test started, how to
// stop them.
type Env struct {
	// Endpoints are the servers' endpoints (the Cluster's, or a user's own
	// from servers.EndpointsFromEnv).
	Endpoints servers.Endpoints
	// Cluster is the set of servers the test started; nil for a user's own,
	// and then the cases that stop servers are skipped, saying so.
	Cluster *servers.Cluster
	// Strategies names the strategies to run; empty means every registered
	// one (strategies.All).
	Strategies []string
}

// EnvOf is the Env of servers a test started itself.
func EnvOf(c *servers.Cluster) Env {
	return Env{Endpoints: c.Endpoints(), Cluster: c}
}

// Run runs every case on every strategy of env, each strategy as a subtest
// named after it and each case as a subtest of that.
func Run(tt *testing.T, env Env) {
	tt.Helper()
	t := Testing(tt)
	infos := strategies.All()
	if len(env.Strategies) > 0 {
		infos = infos[:0]
		for _, name := range env.Strategies {
			info, ok := strategies.Lookup(name)
			if !ok {
				t.Errorf("strategy %q: not registered (known: %v)", name, strategies.Names())
				continue
			}
			infos = append(infos, info)
		}
	}
	if len(infos) == 0 {
		t.Fatal("no strategies to run: import github.com/lockbench/lockbench/strategies/all")
	}
	for _, info := range infos {
		t.Run(info.Name, func(t T) {
			// An Env without the servers the strategy needs is a failure,
			// not a reason to skip.
			target, err := servers.TargetFor(info.Need, env.Endpoints, env.Cluster)
			if err != nil {
				t.Fatalf("%s cannot run: %v", info.Name, err)
			}
			h := &harness{info: info, target: target}
			for _, c := range makeCases() {
				t.Run(c.name, func(t T) { c.runOn(t, h) })
			}
		})
	}
}

// runOn runs the case on h's strategy, or skips it with the reason it does
// not apply.
func (c testCase) runOn(t T, h *harness) {
	if !c.noLock {
		if why := lockCase(h); why != "" {
			t.Skip(why)
		}
	}
	if c.notRun != nil {
		if why := c.notRun(h); why != "" {
			t.Skip(why)
		}
	}
	c.run(t, h)
}

// CaseNames names the cases of the table, in the order they run.
func CaseNames() []string {
	var names []string
	for _, c := range makeCases() {
		names = append(names, c.name)
	}
	return names
}

// RunCase runs the case called name on the strategy info, whose servers
// target gives, as t itself (no subtest): for a command that reports case
// by case (lockbench adapter-check). It skips t with the reason when the
// case does not apply, and fails it for an unknown name.
func RunCase(t T, info strategies.Info, target servers.Target, name string) {
	t.Helper()
	for _, c := range makeCases() {
		if c.name == name {
			c.runOn(t, &harness{info: info, target: target})
			return
		}
	}
	t.Fatalf("no conformance case %q (known: %v)", name, CaseNames())
}

// runID keeps keys of different runs apart: etcd and Postgres keep theirs.
var runID = strconv.FormatInt(time.Now().UnixNano(), 36)

// harness is one strategy under test and the servers it uses.
type harness struct {
	info   strategies.Info
	target servers.Target
}

// control reports whether the strategy excludes nobody by design (nolock).
func (h *harness) control() bool { return h.info.Control }

// config is the strategy's config: the endpoints of the nodes it uses, ttl
// and owner.
func (h *harness) config(ttl time.Duration, owner string) strategies.Config {
	c := h.target.Config
	c.TTL, c.Owner = ttl, owner
	// A blocking adapter waits this long at most, whatever the context
	// (a run's acquire timeout; the default scenario's is 5s): its library's
	// own wait then ends within DownLimit with a server down.
	c.AcquireTimeout = caseAcquireTimeout
	return c
}

// nodes returns the servers the strategy uses, nil when the test did not
// start them.
func (h *harness) nodes() []servers.Node {
	if n := h.target.PgNodes(); n != nil {
		return n // a primary and its standby: both, for the server down
	}
	return h.target.Nodes
}

// key returns a lock key no other test or run uses.
func (h *harness) key(t T) string {
	return "conformance/" + runID + "/" + t.Name()
}

// open builds a strategy and closes it when the test ends (once, even if the
// test closes it first).
func (h *harness) open(t T, ttl time.Duration, owner string) strategies.Strategy {
	t.Helper()
	return h.openFor(t, ttl, owner, 0)
}

// openFor is open for a strategy that workers goroutines call at once
// (Config.Workers; 0: not said).
func (h *harness) openFor(t T, ttl time.Duration, owner string, workers int) strategies.Strategy {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), openTimeout)
	defer cancel()
	cfg := h.config(ttl, owner)
	cfg.Workers = workers
	s, err := strategies.New(ctx, h.info.LookupName(), cfg)
	if err != nil {
		t.Fatalf("strategies.New(%q): got %v; want a strategy", h.info.Name, err)
	}
	c := &closeOnce{Strategy: s}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// peer returns a second contender for s: its own strategy object (its own
// connections, as another instance would have) for cross-process strategies,
// s itself for in-process ones, whose objects do not see each other.
func (h *harness) peer(t T, s strategies.Strategy, ttl time.Duration, owner string) strategies.Strategy {
	if !h.info.CrossProcess {
		return s
	}
	return h.open(t, ttl, owner)
}

// stop kills nodes and returns a function that starts them again. The
// function is idempotent and also runs when the test ends, so later cases
// find the servers up.
func (h *harness) stop(t T, nodes []servers.Node) (restart func()) {
	t.Helper()
	var killed []servers.Node
	var once sync.Once
	restart = func() {
		once.Do(func() {
			ctx, cancel := context.WithTimeout(context.Background(), restartTimeout)
			defer cancel()
			for _, n := range killed {
				if err := n.Start(ctx); err != nil {
					t.Errorf("restart server: %v", err)
				}
			}
		})
	}
	t.Cleanup(restart)
	for _, n := range nodes {
		if err := n.Kill(); err != nil {
			t.Fatalf("kill server: %v", err)
		}
		killed = append(killed, n)
	}
	return restart
}

// closeOnce closes its strategy at most once.
type closeOnce struct {
	strategies.Strategy
	once sync.Once
	err  error
}

func (c *closeOnce) Close() error {
	c.once.Do(func() { c.err = c.Strategy.Close() })
	return c.err
}

// Blocks passes the wrapped strategy's Blocker through.
func (c *closeOnce) Blocks() bool { return strategies.Blocks(c.Strategy) }
