// java-curator: Apache Curator's InterProcessMutex (Debian's
// libcurator-recipes-java 5.4.0, over libzookeeper-java 3.8.0) through the
// adapter protocol (Protocol.java). The lease is the ZooKeeper session of one
// CuratorFramework per process, its sessionTimeoutMs the scenario's TTL.
// Curator's defaults stay but connectionTimeoutMs (the smaller of the TTL and
// the acquire timeout: its 15 s would hold a call to a down server), the retry
// policy (Curator requires one: its documentation's ExponentialBackoffRetry(1000,
// 3)), dontUseContainerParents and ensembleTracker(false) (below);
// docs/adapters.md says why.

import java.io.IOException;
import java.io.InputStream;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.CancellationException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.PredicateResults;
import org.apache.curator.framework.recipes.locks.StandardLockInternalsDriver;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.zookeeper.KeeperException;

public final class JavaCurator implements Protocol.Lock {
    static final String HELLO = "{\"hello\":\"lockbench-adapter\",\"protocol\":1,\"name\":\"java-curator\","
            + "\"library\":\"curator\",\"library_version\":\"5.4.0\",\"backend\":\"zookeeper\",\"nodes\":1,"
            + "\"lease\":\"session\",\"capabilities\":{\"token\":true,\"extend\":false,\"blocking\":true}}";

    static final String ROOT = "/lockbench/curator";

    public static void main(String[] args) {
        Protocol.run(HELLO, args, JavaCurator::new);
    }

    static final class Unavailable extends Exception {
        private static final long serialVersionUID = 1L;

        Unavailable(String msg) {
            super(msg);
        }
    }

    static final class NotOwner extends Exception {
        private static final long serialVersionUID = 1L;

        NotOwner(String msg) {
            super(msg);
        }
    }

    private final CuratorFramework client;
    private final Object connMu = new Object();
    private volatile boolean connected; // written under connMu
    private final Set<Held> holding = ConcurrentHashMap.newKeySet();

    JavaCurator() {
        int ttl = Protocol.envInt("LOCKBENCH_ADAPTER_TTL_MS", 10000);
        int acquireTimeout = Protocol.envInt("LOCKBENCH_ADAPTER_ACQUIRE_TIMEOUT_MS", 5000);
        String servers = System.getenv("LOCKBENCH_ZK_SERVERS");
        if (servers == null || servers.isEmpty()) {
            throw new IllegalStateException("LOCKBENCH_ZK_SERVERS is not set");
        }
        client = CuratorFrameworkFactory.builder()
                .connectString(servers)
                .sessionTimeoutMs(ttl)
                .connectionTimeoutMs(Math.max(100, Math.min(ttl, acquireTimeout)))
                .retryPolicy(new ExponentialBackoffRetry(1000, 3))
                // A container parent is deleted by the server once empty, and
                // made again restarts its sequence numbers, the tokens, at 0.
                .dontUseContainerParents()
                // Its ensemble tracker would replace the connect string with
                // the servers the ensemble's configuration (/zookeeper/config)
                // names: their own addresses, not the proxied ones lockbench
                // gives under a network fault.
                .ensembleTracker(false)
                .build();
        client.getConnectionStateListenable().addListener((c, state) -> onState(state));
        // Not waiting here: an ensemble that is down makes acquires answer
        // unavailable, not the adapter fail to start.
        client.start();
        Protocol.log("java-curator: curator-recipes " + curatorVersion() + ", session timeout " + ttl
                + "ms, connection timeout " + Math.max(100, Math.min(ttl, acquireTimeout)) + "ms");
    }

    /** The version of the curator-recipes jar on the classpath, from its Maven properties. */
    private static String curatorVersion() {
        try (InputStream in = InterProcessMutex.class.getResourceAsStream(
                "/META-INF/maven/org.apache.curator/curator-recipes/pom.properties")) {
            if (in == null) {
                return "?";
            }
            Properties p = new Properties();
            p.load(in);
            return p.getProperty("version", "?");
        } catch (IOException e) {
            return "?";
        }
    }

    private void onState(ConnectionState state) {
        // Only LOST (the session expired, or Curator gave it up after a
        // session timeout without a connection: the server deletes our
        // ephemeral znodes) says the lock is gone. SUSPENDED only says the
        // connection dropped; the session, and the lock, may survive it.
        boolean lost = state == ConnectionState.LOST;
        synchronized (connMu) {
            connected = state.isConnected();
            if (lost) {
                for (Held h : holding) {
                    h.lost = true; // before the notify: a release waiting for a connection sees it
                }
            }
            connMu.notifyAll();
        }
        if (lost) {
            for (Held h : holding) {
                Protocol.log("session lost while holding " + h.ctx.key() + " token " + h.token);
                h.ctx.lost();
            }
        }
    }

    /** A granted lock: its mutex, znode and token. */
    static final class Held {
        final Protocol.Ctx ctx;
        final Mutex mutex;
        final String path;
        final long token;
        final long instance; // Curator's ZooKeeper instance (session) when the znode was made
        volatile boolean lost;

        Held(Protocol.Ctx ctx, Mutex mutex, String path, long token, long instance) {
            this.ctx = ctx;
            this.mutex = mutex;
            this.path = path;
            this.token = token;
            this.instance = instance;
        }
    }

    /** InterProcessMutex with its lock znode's path in view. */
    static final class Mutex extends InterProcessMutex {
        Mutex(CuratorFramework client, String path, Attempt driver) {
            super(client, path, driver);
        }

        String path() {
            return getLockPath();
        }
    }

    /**
     * The standard lock driver of one acquire, which also counts how often it
     * looked for the lock (once when free, again after each wait: waited),
     * records the znode it made, and stops the acquire once cancelled.
     */
    final class Attempt extends StandardLockInternalsDriver {
        final Protocol.Ctx ctx;
        final Thread thread = Thread.currentThread();
        volatile int looks;
        volatile String path;
        volatile long instance;
        private boolean inLibrary = true; // under this

        Attempt(Protocol.Ctx ctx) {
            this.ctx = ctx;
        }

        @Override
        public String createsTheLock(CuratorFramework client, String path, byte[] lockNodeBytes) throws Exception {
            if (ctx.cancelled) {
                throw new CancellationException("cancelled");
            }
            String made = super.createsTheLock(client, path, lockNodeBytes);
            this.instance = client.getZookeeperClient().getInstanceIndex();
            this.path = made;
            if (ctx.cancelled) {
                throw new CancellationException("cancelled"); // cleanup() deletes it
            }
            return made;
        }

        @Override
        public PredicateResults getsTheLock(CuratorFramework client, java.util.List<String> children,
                String sequenceNodeName, int maxLeases) throws Exception {
            looks++;
            if (ctx.cancelled) {
                throw new CancellationException("cancelled"); // Curator deletes our znode
            }
            return super.getsTheLock(client, children, sequenceNodeName, maxLeases);
        }

        /**
         * Interrupts the acquire once its znode exists (it then waits in
         * Object.wait for its predecessor): Curator deletes the znode and
         * throws. Before, createsTheLock sees ctx.cancelled.
         */
        synchronized void cancel() {
            if (inLibrary && path != null) {
                thread.interrupt();
            }
        }

        /** Ends cancel's interrupts, and clears one that came. */
        void done() {
            synchronized (this) {
                inLibrary = false;
            }
            Thread.interrupted();
        }

        /** Deletes a znode a failed or cancelled acquire may have left. */
        void cleanup() {
            String p = path;
            if (p == null) {
                return;
            }
            deleteInBackground(p, "after a failed acquire");
        }
    }

    /** Waits until connected, the deadline passes or ctx is cancelled. */
    private boolean awaitConnected(long deadline, Protocol.Ctx ctx) throws InterruptedException {
        synchronized (connMu) {
            while (!connected && !ctx.cancelled) {
                long left = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
                if (left <= 0) {
                    return false;
                }
                connMu.wait(left);
            }
            return connected;
        }
    }

    private static String lockPath(String key) {
        return ROOT + "/" + key.replace("/", "%2F");
    }

    @Override
    public Protocol.Granted acquire(Map<String, Object> req, Protocol.Ctx ctx) throws Exception {
        long timeoutMs = Math.max(0, Protocol.num(req.get("timeout_ms"), 0));
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
        // Curator, like kazoo, holds a call made while disconnected until it
        // reconnects (up to connectionTimeoutMs): so wait for the connection
        // here, bounded by the acquire's timeout, and answer unavailable
        // without one.
        if (!awaitConnected(deadline, ctx)) {
            if (ctx.cancelled) {
                return null;
            }
            throw new Unavailable("not connected to ZooKeeper");
        }
        Attempt a = new Attempt(ctx);
        ctx.state = a;
        if (ctx.cancelled) { // cancel() came before there was an attempt to cancel
            return null;
        }
        Mutex m = new Mutex(client, lockPath(ctx.key()), a);
        boolean got = false;
        Exception failed = null;
        try {
            long left = Math.max(0, TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime()));
            got = m.acquire(left, TimeUnit.MILLISECONDS);
        } catch (Exception e) {
            failed = e;
        } finally {
            a.done(); // this thread serves other acquires later: no interrupt may follow it there
        }
        if (failed != null) {
            a.cleanup();
            if (ctx.cancelled) {
                return null; // already answered `cancelled`
            }
            throw failed;
        }
        if (!got) {
            if (!connected) {
                throw new Unavailable("not connected to ZooKeeper");
            }
            return null;
        }
        // The lock znode is <parent>/_c_<uuid>-lock-0000000042: ZooKeeper's
        // sequence number of the parent, which grows with each contender for
        // the key (the parent is persistent: dontUseContainerParents), so it
        // serves as a fencing token, plus one (the protocol's tokens are >= 1;
        // a fresh parent's first is 0). As py-kazoo's.
        String path = m.path();
        long token = Long.parseLong(path.substring(path.length() - 10)) + 1;
        Held h = new Held(ctx, m, path, token, a.instance);
        holding.add(h);
        if (gone(h)) {
            // The session that made the znode ended meanwhile (a LOST from
            // now on is a lost event after the ok, Protocol.Ctx.lost).
            holding.remove(h);
            deleteInBackground(path, "granted on a session that ended");
            throw new Unavailable("the ZooKeeper session that made the lock znode ended before the grant");
        }
        return new Protocol.Granted(h, token, a.looks > 1);
    }

    /** Whether h's session ended: reported LOST, or Curator is on a newer ZooKeeper instance. */
    private boolean gone(Held h) {
        return h.lost || client.getZookeeperClient().getInstanceIndex() != h.instance;
    }

    /**
     * Deletes a lock znode in the background, retried by Curator until it
     * is done (guaranteed), in case its session still holds it.
     */
    private void deleteInBackground(String path, String why) {
        try {
            client.delete().guaranteed().inBackground().forPath(path);
        } catch (Exception e) {
            Protocol.log("delete " + path + " (" + why + "): " + Protocol.describe(e));
        }
    }

    @Override
    public String overdue(Protocol.Ctx ctx) {
        // The acquire is stuck in a call Curator holds while disconnected.
        return connected ? "timeout" : "unavailable";
    }

    @Override
    public String overdueRelease(Object handle) {
        // The release is in Curator's retries of its delete (the connection
        // dropped during it); its guaranteed delete goes on in the background.
        return connected ? "timeout" : "unavailable";
    }

    @Override
    public void cancel(Protocol.Ctx ctx) {
        Object a = ctx.state;
        if (a instanceof Attempt) {
            ((Attempt) a).cancel();
        }
        synchronized (connMu) {
            connMu.notifyAll(); // an acquire waiting for a connection
        }
    }

    @Override
    public void release(Object handle) throws Exception {
        Held h = (Held) handle;
        try {
            // Without a connection h.mutex.release() would sit in Curator's
            // retries (connection timeout, then the retry policy's sleeps:
            // 8-15 s), past the release's deadline: wait for one as long as
            // lockbench waits for the release (the acquire timeout), and
            // stop waiting when the session is reported lost.
            long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(Protocol.RELEASE_MS);
            synchronized (connMu) {
                while (!connected && !gone(h)) {
                    long left = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
                    if (left <= 0) {
                        break;
                    }
                    connMu.wait(left);
                }
            }
            // A new ZooKeeper instance is a new session: the znode was the old
            // one's, gone with it (Curator reports LOST, maybe a little later).
            if (gone(h)) {
                // Not h.mutex.release(), which would wait for a connection: the
                // znode is gone, or goes with its session; delete it all the same
                // in the background, in case the old session still holds it.
                deleteInBackground(h.path, "released after its session ended");
                throw new NotOwner("the session holding the lock expired");
            }
            if (!connected) {
                // The session may live on: its znode is deleted once reconnected.
                deleteInBackground(h.path, "released while disconnected");
                throw new Unavailable("not connected to ZooKeeper within " + Protocol.RELEASE_MS
                        + "ms; the lock znode is deleted in the background");
            }
            // A release the pause held up until Curator made a new session
            // succeeds on Curator's side (it ignores the znode gone with the old
            // one) and is not ours either, as for the Go zookeeper strategy.
            h.mutex.release();
            if (gone(h)) {
                throw new NotOwner("the session holding the lock expired before its release");
            }
        } finally {
            holding.remove(h); // until here a LOST marks it lost
        }
    }

    @Override
    public String classify(Throwable e) {
        if (e instanceof NotOwner || e instanceof IllegalMonitorStateException) {
            return "not_owner";
        }
        if (e instanceof Unavailable || e instanceof KeeperException.ConnectionLossException
                || e instanceof KeeperException.SessionExpiredException
                || e instanceof KeeperException.SessionMovedException) {
            return "unavailable";
        }
        if (e instanceof KeeperException.OperationTimeoutException) {
            return "timeout";
        }
        return "error";
    }

    @Override
    public void close() {
        client.close();
    }
}
