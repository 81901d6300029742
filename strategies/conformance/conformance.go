package conformance

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/lockbench/lockbench/strategies"
)

// Node is a server the suite can stop and start again. *servers.Redis,
// *servers.EtcdMember and *servers.Postgres (package bench/servers) are Nodes.
type Node interface {
	// Kill stops the server abruptly.
	Kill() error
	// Start starts it again at the same address and returns once it serves.
	Start(ctx context.Context) error
}

// Env says where the servers are and how to stop them.
type Env struct {
	// Config carries the endpoints (RedisAddrs, RedisPassword, EtcdEndpoints,
	// PostgresDSN). The suite sets TTL and Owner itself.
	Config strategies.Config
	// Redis are the servers behind Config.RedisAddrs, in the same order.
	Redis []Node
	// Etcd are the members behind Config.EtcdEndpoints.
	Etcd []Node
	// Postgres is the server behind Config.PostgresDSN.
	Postgres Node
	// Strategies names the strategies to run; empty means every registered
	// one (strategies.All).
	Strategies []string
}

// Run runs every case on every strategy of env, each strategy as a subtest
// named after it and each case as a subtest of that.
func Run(t *testing.T, env Env) {
	t.Helper()
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
		t.Run(info.Name, func(t *testing.T) {
			h := &harness{env: env, info: info}
			if err := h.check(); err != nil {
				t.Fatalf("%s cannot run: %v", info.Name, err)
			}
			for _, c := range makeCases() {
				if c.notRun != nil {
					if why := c.notRun(h); why != "" {
						t.Logf("%s: not run for %s: %s", c.name, info.Name, why)
						continue
					}
				}
				t.Run(c.name, func(t *testing.T) { c.run(t, h) })
			}
		})
	}
}

// runID keeps keys of different runs apart: etcd and Postgres keep theirs.
var runID = strconv.FormatInt(time.Now().UnixNano(), 36)

// harness is one strategy under test in one Env.
type harness struct {
	env  Env
	info strategies.Info
}

// check reports an Env that lacks the endpoints the strategy needs: that is a
// failure, not a reason to skip.
func (h *harness) check() error {
	c := h.env.Config
	switch h.info.Backend {
	case strategies.BackendNone:
		return nil
	case strategies.BackendRedis:
		if n := max(h.info.RedisNodes, 1); len(c.RedisAddrs) < n {
			return fmt.Errorf("it needs %d Redis nodes; Env.Config.RedisAddrs has %d", n, len(c.RedisAddrs))
		}
	case strategies.BackendEtcd:
		if len(c.EtcdEndpoints) == 0 {
			return errors.New("it needs etcd; Env.Config.EtcdEndpoints is empty")
		}
	case strategies.BackendPostgres:
		if c.PostgresDSN == "" {
			return errors.New("it needs Postgres; Env.Config.PostgresDSN is empty")
		}
	default:
		return fmt.Errorf("unknown backend %q", h.info.Backend)
	}
	return nil
}

// control reports whether the strategy excludes nobody by design (nolock).
func (h *harness) control() bool { return h.info.Name == "nolock" }

// config is the strategy's config: Env's endpoints (only as many Redis nodes
// as Info.RedisNodes), ttl and owner.
func (h *harness) config(ttl time.Duration, owner string) strategies.Config {
	c := h.env.Config
	if h.info.Backend == strategies.BackendRedis && h.info.RedisNodes > 0 {
		c.RedisAddrs = c.RedisAddrs[:h.info.RedisNodes]
	}
	c.TTL, c.Owner = ttl, owner
	return c
}

// nodes returns the servers the strategy uses, nil when Env cannot stop them.
func (h *harness) nodes() []Node {
	switch h.info.Backend {
	case strategies.BackendRedis:
		if n := max(h.info.RedisNodes, 1); len(h.env.Redis) >= n {
			return h.env.Redis[:n]
		}
	case strategies.BackendEtcd:
		return h.env.Etcd
	case strategies.BackendPostgres:
		if h.env.Postgres != nil {
			return []Node{h.env.Postgres}
		}
	}
	return nil
}

// key returns a lock key no other test or run uses.
func (h *harness) key(t *testing.T) string {
	return "conformance/" + runID + "/" + t.Name()
}

// open builds a strategy and closes it when the test ends (once, even if the
// test closes it first).
func (h *harness) open(t *testing.T, ttl time.Duration, owner string) strategies.Strategy {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), openTimeout)
	defer cancel()
	s, err := strategies.New(ctx, h.info.Name, h.config(ttl, owner))
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
func (h *harness) peer(t *testing.T, s strategies.Strategy, ttl time.Duration, owner string) strategies.Strategy {
	if !h.info.CrossProcess {
		return s
	}
	return h.open(t, ttl, owner)
}

// stop kills nodes and returns a function that starts them again. The
// function is idempotent and also runs when the test ends, so later cases
// find the servers up.
func (h *harness) stop(t *testing.T, nodes []Node) (restart func()) {
	t.Helper()
	var killed []Node
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
