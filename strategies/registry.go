package strategies

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Backend names a kind of server a strategy needs.
type Backend string

// The backends lockbench knows how to start or reach.
const (
	BackendNone      Backend = ""
	BackendRedis     Backend = "redis"
	BackendEtcd      Backend = "etcd"
	BackendPostgres  Backend = "postgres"
	BackendZooKeeper Backend = "zookeeper"
	BackendNATS      Backend = "nats"
	// BackendMySQL is a MySQL-protocol server: the MariaDB lockbench
	// starts, or a user's MariaDB or MySQL (Config.MySQLDSN).
	BackendMySQL Backend = "mysql"
)

// Need is what a strategy needs from the servers: a backend and how many of
// its nodes. Package servers answers a Need with endpoints and, for servers
// lockbench started itself, the nodes a fault can stop.
type Need struct {
	// Backend is the kind of server; BackendNone for an in-process strategy.
	Backend Backend
	// Nodes is how many independent nodes of Backend the strategy talks to:
	// 1 for a single-node lock, 5 for redlock. 0 means the backend as a
	// whole, however many members it has (an etcd cluster).
	Nodes int
}

// String names the need for people: "redis ×5", "etcd", "none".
func (n Need) String() string {
	switch {
	case n.Backend == BackendNone:
		return "none"
	case n.Nodes > 1:
		return fmt.Sprintf("%s ×%d", n.Backend, n.Nodes)
	}
	return string(n.Backend)
}

// Info describes a registered strategy: everything the rest of lockbench
// needs to know about it is data here, so that no package branches on a
// strategy's name.
type Info struct {
	// Name is the registry name (`setnx`, `etcd`, …).
	Name string
	// Description is the one-line summary `lockbench strategies` prints.
	Description string
	// Order places it in listings, tables, legends and grids, lower first
	// (the built-ins: the control, then roughly weakest lock to strongest,
	// in steps of 10); 0 places it after every strategy that sets one.
	Order int
	// Color is its colour in every chart, "#rrggbb"; "" lets the report
	// pick one by a hash of the name.
	Color string
	// Need is the server the strategy needs.
	Need Need
	// Fencing reports whether leases carry fencing tokens.
	Fencing bool
	// CrossProcess reports whether the lock excludes holders in other
	// instances (false for nolock and mutex).
	CrossProcess bool
	// Control marks a strategy that excludes nobody by design (nolock): the
	// checker must catch it every time, or nothing else lockbench reports
	// means anything.
	Control bool
	// Transactional marks a strategy that takes no lock (pg-unique): each
	// delivery is one transaction on the Postgres store (a processed marker
	// under a unique constraint and a guarded debit), run by the load
	// generator through the store; its Acquire returns ErrTransactional. It
	// needs the Postgres store.
	Transactional bool
	// Transaction is what a transactional strategy's transaction does to
	// exclude a second delivery; TxUniqueMarker for pg-unique.
	Transaction Transaction
	// SessionBound marks a lock that lives as long as its holder's
	// connection (a Postgres advisory lock): no TTL, kept through a pause,
	// freed at once when the holder closes or dies, and lost, while the
	// holder carries on, when the connection is cut (a reset partition, a
	// restart, a failover).
	SessionBound bool
	// KeepAlive marks a lock whose lease is renewed while its holder runs
	// (etcd's session keepalive, a watchdog): slow work past the TTL keeps
	// the lock, a paused process (whose renewals stop with it) does not.
	KeepAlive bool
	// Redelivers marks a strategy whose deliveries take messages from a
	// broker that delivers a message again when its consumer outlives the
	// ack deadline (the queue): a payment may then be processed more often
	// than it has deliveries, so the store cannot bound its critical
	// sections by them.
	Redelivers bool
	// KeepsNoContext marks a strategy that, with its client, uses the
	// context of an Acquire or a Release only while the call runs: no
	// goroutine it started or left waiting reads the context, or its Done
	// channel, after the call returns, unless through a derived context
	// (which registers with it). go-redis's commands are such; the load
	// generator then reuses a worker's call contexts, Done's channel
	// included, from call to call (loadgen's deadlines).
	KeepsNoContext bool
	// Lease, when set, is how long a lock outlives a holder that stops
	// renewing it, given the configured TTL, when the server grants
	// something other than the TTL (etcd: whole seconds, at least its
	// minimum lease). Nil means the TTL itself.
	Lease func(ttl time.Duration) time.Duration
	// Ref, when set, is the name Lookup finds the strategy by, where it
	// differs from Name: an adapter run as exec:PATH ARGS is named exec:
	// and the name from its hello. An instance process looks its strategy
	// up by Ref.
	Ref string
	// New builds the strategy.
	New Factory
}

// LookupName is the name Lookup finds i by: Ref, or Name.
func (i Info) LookupName() string {
	if i.Ref != "" {
		return i.Ref
	}
	return i.Name
}

// Transaction names how a transactional strategy's delivery (one
// transaction on the Postgres store) excludes a second delivery of the same
// payment.
type Transaction int

const (
	// TxUniqueMarker: the processed marker's unique constraint
	// (pg-unique).
	TxUniqueMarker Transaction = iota
	// TxRowLock: SELECT … FOR UPDATE on the account row, then a plain
	// processed mark (pg-for-update).
	TxRowLock
	// TxOptimistic: a version check on the account row's update, retried
	// on conflict (pg-optimistic).
	TxOptimistic
)

// LeaseTTL is how long a lock of the strategy outlives a holder that stops
// renewing it: Info.Lease(ttl), or ttl when Lease is nil.
func (i Info) LeaseTTL(ttl time.Duration) time.Duration {
	if i.Lease == nil {
		return ttl
	}
	return i.Lease(ttl)
}

// Factory builds a strategy from a config. It should check connectivity so
// a down server is reported here, within seconds.
type Factory func(ctx context.Context, cfg Config) (Strategy, error)

// FactoryOf makes a Factory of a constructor that returns a concrete
// strategy type (usually a pointer), such as a strategy package's New. On an
// error the Factory returns a nil Strategy, not the constructor's nil *T
// inside a non-nil interface, so that callers' s != nil checks hold.
func FactoryOf[T Strategy](newT func(ctx context.Context, cfg Config) (T, error)) Factory {
	return func(ctx context.Context, cfg Config) (Strategy, error) {
		s, err := newT(ctx, cfg)
		if err != nil {
			return nil, err // not a typed nil in a non-nil interface
		}
		return s, nil
	}
}

var (
	mu       sync.RWMutex
	registry = map[string]Info{}
	// resolvers resolve names by prefix (RegisterResolver); resolved
	// caches their answers, so that each name is resolved once.
	resolvers = map[string]Resolver{}
	resolved  = map[string]resolution{}
)

// Resolver finds the strategy a name of its prefix names (exec:PATH
// ARGS), which no Register call can list in advance. Its error is one
// line saying what is wrong.
type Resolver func(name string) (Info, error)

type resolution struct {
	info Info
	err  error
}

// RegisterResolver makes names that start with prefix resolve through r,
// once each. It panics on a duplicate or empty prefix, as Register does.
func RegisterResolver(prefix string, r Resolver) {
	mu.Lock()
	defer mu.Unlock()
	if prefix == "" || r == nil {
		panic("strategies: RegisterResolver with empty prefix or nil resolver")
	}
	if _, dup := resolvers[prefix]; dup {
		panic("strategies: RegisterResolver called twice for " + prefix)
	}
	resolvers[prefix] = r
}

// Resolve returns the strategy called name: a registered one, or one a
// resolver finds (its error, once, for a name it cannot resolve).
func Resolve(name string) (Info, error) {
	lookups.Add(1)
	mu.RLock()
	info, ok := registry[name]
	res, done := resolved[name]
	var r Resolver
	for prefix, pr := range resolvers {
		if strings.HasPrefix(name, prefix) {
			r = pr
		}
	}
	mu.RUnlock()
	switch {
	case ok:
		return info, nil
	case done:
		return res.info, res.err
	case r == nil:
		return Info{}, fmt.Errorf("unknown strategy %q", name)
	}
	// Outside the lock: a resolver may take seconds (it runs a process).
	info, err := r(name)
	if err == nil && info.Ref == "" {
		info.Ref = name
	}
	mu.Lock()
	resolved[name] = resolution{info, err}
	mu.Unlock()
	return info, err
}

// lookups counts Resolve's calls (Lookup's too): Lookups.
var lookups atomic.Int64

// Lookups is how many times this process has looked a strategy up by name
// (Resolve, Lookup): a command looks each of its strategies up once and
// passes the Info on.
func Lookups() int64 { return lookups.Load() }

// Register makes a strategy available by info.Name. It panics on a duplicate
// or empty name, as database/sql.Register does: that is a programming error
// found at init time, not a runtime condition.
func Register(info Info) {
	mu.Lock()
	defer mu.Unlock()
	if info.Name == "" || info.New == nil {
		panic("strategies: Register with empty name or nil factory")
	}
	if _, dup := registry[info.Name]; dup {
		panic("strategies: Register called twice for " + info.Name)
	}
	registry[info.Name] = info
}

// Lookup returns the registered strategy called name, or the one a
// resolver finds for it (Resolve, which also says why not).
func Lookup(name string) (Info, bool) {
	info, err := Resolve(name)
	return info, err == nil
}

// Registered returns the strategy registered as name, resolving nothing
// (an exec: name is not run to find out).
func Registered(name string) (Info, bool) {
	mu.RLock()
	defer mu.RUnlock()
	info, ok := registry[name]
	return info, ok
}

// MustLookup is Lookup for a name known to be registered (a test's, a
// program's own constant); it panics on an unknown one.
func MustLookup(name string) Info {
	info, ok := Lookup(name)
	if !ok {
		panic(fmt.Sprintf("strategies: unknown strategy %q", name))
	}
	return info
}

// All returns every registered strategy by Order, then name.
func All() []Info {
	mu.RLock()
	defer mu.RUnlock()
	out := make([]Info, 0, len(registry))
	for _, info := range registry {
		out = append(out, info)
	}
	sort.Slice(out, func(i, j int) bool {
		ri, rj := rank(out[i].Order), rank(out[j].Order)
		if ri != rj {
			return ri < rj
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// rank is an Order to sort by: unset (0) after every set one.
func rank(order int) int {
	if order <= 0 {
		return math.MaxInt
	}
	return order
}

// Builtin lists the registered strategies in order: those the program
// links (package strategies/all links every one lockbench ships).
func Builtin() []string { return Names() }

// Names returns the names of All, in order.
func Names() []string {
	all := All()
	names := make([]string, len(all))
	for i, info := range all {
		names[i] = info.Name
	}
	return names
}

// New builds the strategy called name.
func New(ctx context.Context, name string, cfg Config) (Strategy, error) {
	info, ok := Lookup(name)
	if !ok {
		return nil, fmt.Errorf("strategies: unknown strategy %q (known: %s)", name, strings.Join(Names(), ", "))
	}
	return info.Open(ctx, cfg)
}

// Open builds the strategy i registers, with cfg's defaults filled in.
func (i Info) Open(ctx context.Context, cfg Config) (Strategy, error) {
	return i.New(ctx, cfg.WithDefaults())
}
