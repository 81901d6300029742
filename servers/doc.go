// Package servers starts and stops the lock servers lockbench measures:
// Redis nodes, an etcd cluster, PostgreSQL, a ZooKeeper ensemble, a NATS
// server with JetStream (the queue strategy's broker) and MariaDB (the
// MySQL backend), on loopback, on free ports, in one temporary directory, so that a benchmark
// or a test needs nothing but the binaries. For instances on agents off
// this host's loopback (package loadgen/agent), Options.Host puts every
// server on another address of this machine (Postgres on it and on
// 127.0.0.1), a private one only (CheckHost): never a public interface. It also reads and prints the
// environment variables that point lockbench at servers someone else runs
// instead (EnvRedisAddrs and friends), and gives the fault injector its
// handles: kill a node, start it again, move a Redis node's clock.
//
// A strategy declares what it needs (strategies.Need: a backend and a node
// count); TargetFor answers it with a Target: the endpoints of exactly the
// nodes the strategy uses, as a lock config, and, when lockbench started
// them, the Nodes a fault can kill, restart or move the clock of. Everything
// the package knows about one kind of server (its flag and variable, its
// endpoints in a config, its nodes in a Cluster, how to point an endpoint at
// a proxy) is one descriptor in backend.go, so that no other package
// branches on the kind of server.
//
// # Topologies
//
// Redis comes in two layouts (Options.RedisTopology, --redis-topology):
// TopologyMasters, the default, is independent masters, one per node a
// strategy needs (redlock's five); TopologySentinel is one primary with two
// replicas and three Sentinels (sentinel.go), as most teams run Redis. On
// the replicated layout the single-node strategies find the primary
// through the Sentinels (Config.RedisSentinels) and follow it after a
// failover, Target.Roles names the primary and the replicas of the moment
// for the failover fault, and a killed node is started again as a replica
// of whichever primary the Sentinels name. Multi-node strategies (redlock,
// redsync) need independent masters and are not applicable there
// (ErrReplicated). The Sentinels run with short timeouts (down after
// SentinelDownAfter) so that a failover takes seconds, not the default's
// half minute.
//
// Ensure is the usual entry point: it starts only the kinds of server that the
// given endpoints do not already name. Start always starts everything asked
// for. Cluster.Stop stops it all and removes the temporary directory.
//
// # Child processes
//
// Every server runs as a child process in its own process group, with
// Pdeathsig set to SIGKILL, so no server outlives lockbench even when
// lockbench itself is killed (the temporary directory then stays behind
// until a later Start removes it).
// Its output goes to server.log under the server's own directory (and to
// Options.Log when set, each line prefixed with the server's name); the last
// lines of that log are part of the error when a server fails to start.
//
// etcd is not a separate binary: it is built into lockbench from
// go.etcd.io/etcd/server/v3/embed (package etcdchild). Each member still
// runs as a child process (so it can be killed like any other server): a
// lockbench binary started with LOCKBENCH_CHILD=etcd and its configuration in
// LOCKBENCH_CHILD_ETCD_* environment variables. The lockbench command is its
// own launcher; a program that does not link etcdchild (a test binary) uses
// $LOCKBENCH_ETCD_BIN, or builds the lockbench binary once with `go build`.
// Keeping the etcd server out of test binaries keeps them small and their
// -race builds fast. NATS is built in too (nats.go, from
// github.com/nats-io/nats-server/v2) and runs the same way, as the running
// binary started again with LOCKBENCH_CHILD=nats; it is linked into every
// binary that imports servers, and a restarted server comes back without
// its JetStream store.
//
// PostgreSQL refuses to run as root. When lockbench runs as root, initdb and
// postgres run as the postgres user, which owns the server's directory; the
// temporary directory is made traversable for it, and its parents ($TMPDIR,
// /tmp by default) must be too.
//
// MariaDB is Debian's mariadb-server (10.11): mariadb-install-db creates
// its system tables in the server's directory, and mariadbd runs with TCP
// on (--skip-networking=0) on a free port, its socket in that directory,
// --no-defaults (no /etc/mysql configuration is read) and an init file
// that creates the user MariaDBUser, with a password generated for each
// Cluster, and the database MariaDBDatabase; root is reachable only
// through the socket. As PostgreSQL, mariadbd does not run as root: as
// root it runs as the mysql user. Debian's packaged service is neither
// needed nor touched.
//
// A missing redis-server, PostgreSQL, libfaketime, ZooKeeper or MariaDB is installed
// with apt-get (once per process) when lockbench runs as root on a system
// that has apt-get; otherwise Start returns an error saying what to install.
// ZooKeeper is Debian's zookeeper package (3.8), run straight from java
// (QuorumPeerMain with a generated zoo.cfg, 256MB of heap) with a tickTime
// of 100ms, so that session timeouts down to 200ms are granted as asked;
// its transaction log is not fsynced either.
//
// # Temporary directories
//
// Each Cluster's servers keep their data in one directory under
// os.TempDir, lockbench-*, which Stop removes. A process that cannot run
// Stop (SIGKILL, the OOM killer, a panic) would leave it behind for good
// (160 MB of Postgres data a run), so the directory holds an owner file
// naming the process that made it, and the next Start removes every such
// directory whose owner is gone.
//
// A pid alone does not say that: the kernel gives a dead process's pid to
// a new one. The owner file also holds the process's start time (in clock
// ticks since boot, from /proc/PID/stat), which a new holder of the pid
// does not share, the boot id (start times count from boot) and the pid
// namespace (a pid means nothing in another one). A directory is removed
// only when its owner is known to be gone: same namespace, and no process
// with that pid and start time, or another boot. A directory without an
// owner file (someone else's, or one whose owner was killed between
// creating it and writing the file) or whose owner lives in another pid
// namespace (a container sharing /tmp) is left alone.
//
// # Caveats
//
// These servers are tuned for benchmarking locks on one machine, not for
// keeping data: PostgreSQL runs with fsync and full_page_writes off,
// MariaDB with innodb_flush_log_at_trx_commit=2, and etcd with
// UnsafeNoFsync (etcd also compacts its history every minute, or its
// memory grows with every lock). Both survive a killed process (acknowledged
// commits are in the page cache; PostgreSQL keeps synchronous_commit on so
// that they are) but not a power cut. Redis saves
// nothing unless Options.RedisAOF is set, so a killed and restarted node comes
// back empty, which is the point of the restart-node fault.
//
// Redis nodes started with Options.Faketime run under libfaketime, which
// re-reads the node's clock offset file on every clock read: such nodes are
// noticeably slower (about a third fewer operations per second), so use
// Faketime only for runs with the clock-jump fault. Only their wall clock
// (CLOCK_REALTIME, which Redis uses for key expiry) is moved, as an NTP step
// would; a clock offset survives Kill and Start of the node. The monotonic
// clock is left alone (FAKETIME_DONT_FAKE_MONOTONIC): Redis schedules its
// own timers on it, and faking it too would stall the node's event loop
// (expiry cycle, even shutdown) for as long as a backward step.
// FAKETIME_NO_CACHE makes every clock read see the file's current offset,
// so SetClockOffset takes effect at once. libc's debugging malloc is
// preloaded before libfaketime: with libfaketime alone, Debian's
// jemalloc-linked redis-server hangs at start (jemalloc's initialisation
// reads the clock, which calls back into malloc).
//
// Ports are found by binding port 0 and closing the listener, so another
// process may take one before the server binds it; Start retries a server
// (with new ports) a few times when its log says the address is in use.
package servers
