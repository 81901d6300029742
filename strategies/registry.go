package strategies

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
)

// Backend names a kind of server a strategy needs.
type Backend string

// The backends lockbench knows how to start or reach.
const (
	BackendNone     Backend = ""
	BackendRedis    Backend = "redis"
	BackendEtcd     Backend = "etcd"
	BackendPostgres Backend = "postgres"
)

// Info describes a registered strategy.
type Info struct {
	// Name is the registry name (`setnx`, `etcd`, …).
	Name string
	// Description is the one-line summary `lockbench strategies` prints.
	Description string
	// Backend is the server the strategy needs, BackendNone for in-process.
	Backend Backend
	// RedisNodes is how many Redis nodes the strategy uses (redlock: 5).
	RedisNodes int
	// Fencing reports whether leases carry fencing tokens.
	Fencing bool
	// CrossProcess reports whether the lock excludes holders in other
	// instances (false for nolock and mutex).
	CrossProcess bool
	// New builds the strategy.
	New Factory
}

// Factory builds a strategy from a config. It should check connectivity so
// a down server is reported here, within seconds.
type Factory func(ctx context.Context, cfg Config) (Strategy, error)

var (
	mu       sync.RWMutex
	registry = map[string]Info{}
)

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

// Lookup returns the registered strategy called name.
func Lookup(name string) (Info, bool) {
	mu.RLock()
	defer mu.RUnlock()
	info, ok := registry[name]
	return info, ok
}

// All returns every registered strategy in the canonical order (Order first,
// then any others by name).
func All() []Info {
	mu.RLock()
	defer mu.RUnlock()
	out := make([]Info, 0, len(registry))
	for _, info := range registry {
		out = append(out, info)
	}
	sort.Slice(out, func(i, j int) bool {
		ri, rj := rank(out[i].Name), rank(out[j].Name)
		if ri != rj {
			return ri < rj
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// Names returns the names of All, in order.
func Names() []string {
	all := All()
	names := make([]string, len(all))
	for i, info := range all {
		names[i] = info.Name
	}
	return names
}

// Order is the canonical order of the built-in strategies, weakest first.
var Order = []string{"nolock", "mutex", "setnx", "fencing", "redlock", "etcd", "pg-onconflict"}

func rank(name string) int {
	for i, n := range Order {
		if n == name {
			return i
		}
	}
	return len(Order)
}

// New builds the strategy called name.
func New(ctx context.Context, name string, cfg Config) (Strategy, error) {
	info, ok := Lookup(name)
	if !ok {
		return nil, fmt.Errorf("strategies: unknown strategy %q (known: %s)", name, strings.Join(Names(), ", "))
	}
	return info.New(ctx, cfg.WithDefaults())
}
