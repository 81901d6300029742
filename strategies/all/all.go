// Package all registers every built-in strategy. Import it for its side
// effect: _ "github.com/lockbench/lockbench/strategies/all".
package all

import (
	_ "github.com/lockbench/lockbench/strategies/adapter"      // node-redlock, node-redis-semaphore, py-redis-lock, py-kazoo, java-curator, exec:PATH
	_ "github.com/lockbench/lockbench/strategies/etcdlock"     // etcd
	_ "github.com/lockbench/lockbench/strategies/fencing"      // fencing
	_ "github.com/lockbench/lockbench/strategies/mutex"        // mutex
	_ "github.com/lockbench/lockbench/strategies/mysqllock"    // mysql-get-lock
	_ "github.com/lockbench/lockbench/strategies/nolock"       // nolock
	_ "github.com/lockbench/lockbench/strategies/pgadvisory"   // pg-advisory
	_ "github.com/lockbench/lockbench/strategies/pgforupdate"  // pg-for-update
	_ "github.com/lockbench/lockbench/strategies/pgonconflict" // pg-onconflict
	_ "github.com/lockbench/lockbench/strategies/pgoptimistic" // pg-optimistic
	_ "github.com/lockbench/lockbench/strategies/pgunique"     // pg-unique
	_ "github.com/lockbench/lockbench/strategies/queue"        // queue
	_ "github.com/lockbench/lockbench/strategies/redislock"    // redislock
	_ "github.com/lockbench/lockbench/strategies/redlock"      // redlock
	_ "github.com/lockbench/lockbench/strategies/redsync"      // redsync
	_ "github.com/lockbench/lockbench/strategies/rueidislock"  // rueidislock
	_ "github.com/lockbench/lockbench/strategies/setnx"        // setnx
	_ "github.com/lockbench/lockbench/strategies/watchdog"     // setnx-watchdog
	_ "github.com/lockbench/lockbench/strategies/zklock"       // zookeeper
)
