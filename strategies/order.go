package strategies

import "slices"

// canon is the one place that orders the built-in strategies: listings,
// tables, legends and safety grids all follow it. The control comes first,
// then roughly from weakest to strongest lock. (Their chart colours are
// the report package's, in the same order.)
var canon = []string{
	"nolock", "mutex", "setnx", "redislock", "setnx-watchdog", "rueidislock", "fencing", "redlock", "redsync",
	"etcd", "zookeeper", "pg-onconflict", "pg-advisory", "mysql-get-lock", "pg-unique", "pg-for-update", "pg-optimistic", "queue",
	"node-redlock", "node-redis-semaphore", "py-redis-lock", "py-kazoo",
}

// Builtin lists the built-in strategies in canonical order.
func Builtin() []string {
	return append([]string(nil), canon...)
}

// Rank is the position of name in the canonical order; strategies not in it
// rank after every built-in one (and sort among themselves by name).
func Rank(name string) int {
	if i := slices.Index(canon, name); i >= 0 {
		return i
	}
	return len(canon)
}
