// The lockbench adapter protocol, version 1, for the Java adapters
// (docs/adapters.md), as adapters/python/lockbench_protocol.py: the main
// thread reads requests; each acquire runs on a pooled thread, which then
// serves that lock's release (Curator's InterProcessMutex belongs to the
// thread that took it). An acquire unanswered OVERDUE_MS past its timeout_ms
// is answered by the loop with lock.overdue(ctx), and a lock granted later is
// released; a release unanswered OVERDUE_MS past RELEASE_MS (the scenario's
// acquire timeout, a release's deadline in lockbench) is answered with
// lock.overdueRelease, so that a library that retries for longer does not
// get the adapter killed. Compiled at first use with javac --release 11
// (package adapters): the JDK's classes only, hence the small JSON reader.

import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.SynchronousQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

final class Protocol {
    private Protocol() {}

    /** An acquire unanswered this long past its timeout_ms is answered by the loop. */
    static final long OVERDUE_MS = 500;

    /**
     * A release's time: lockbench gives one the scenario's acquire timeout
     * (and kills an adapter that has not answered 5 s after it); 5 s, its
     * default, when not told.
     */
    static final long RELEASE_MS = envInt("LOCKBENCH_ADAPTER_ACQUIRE_TIMEOUT_MS", 5000);

    /** What an adapter wraps. */
    interface Lock {
        /**
         * Takes the lock req names, waiting up to req's timeout_ms; null when
         * not acquired (or when ctx.cancelled: the answer is sent already).
         */
        Granted acquire(Map<String, Object> req, Ctx ctx) throws Exception;

        /** Releases a lock acquire granted, on the thread that acquired it. */
        void release(Object handle) throws Exception;

        /** The protocol's error class of e. */
        String classify(Throwable e);

        /** Makes a running acquire of ctx return soon (ctx.cancelled is set). */
        default void cancel(Ctx ctx) {}

        /** The error class of an acquire past its timeout. */
        default String overdue(Ctx ctx) {
            return "timeout";
        }

        /** The error class of a release still running OVERDUE_MS past RELEASE_MS. */
        default String overdueRelease(Object handle) {
            return "timeout";
        }

        /** Closes the library's clients; bounded by the loop. */
        default void close() {}
    }

    /** A granted lock. */
    static final class Granted {
        final Object handle;
        final long token;
        final boolean waited;

        Granted(Object handle, long token, boolean waited) {
            this.handle = handle;
            this.token = token;
            this.waited = waited;
        }
    }

    /** One acquire request, and the lock it got while held. */
    static final class Ctx {
        final Map<String, Object> req;
        final long id;
        /** Set once lockbench gave up on the acquire (cancel, or overdue). */
        volatile boolean cancelled;
        boolean answered; // under Loop.mu
        // Under this monitor. granted: the lock, set only once its ok is
        // out, so that no lost event precedes the ok; lostEarly: a lost()
        // before that, whose event then follows the ok; answeredRelease:
        // the release has begun, and lost() sends nothing from then on.
        private Granted granted;
        private boolean lostEarly;
        private boolean answeredRelease;
        final LinkedBlockingQueue<Map<String, Object>> ops = new LinkedBlockingQueue<>();
        ScheduledFuture<?> overdue;
        /** The adapter's own state of this acquire. */
        volatile Object state;

        Ctx(Map<String, Object> req) {
            this.req = req;
            this.id = num(req.get("id"), -1);
        }

        String key() {
            Object k = req.get("key");
            return k == null ? "" : k.toString();
        }

        /**
         * Sends the lost event of the lock this acquire got, if held; if
         * its ok is not out yet, right after it.
         */
        synchronized void lost() {
            if (answeredRelease) {
                return;
            }
            if (granted == null) {
                lostEarly = true;
                return;
            }
            sendLost(granted);
        }

        /** Sends the acquire's ok, then publishes its lock to lost(). */
        synchronized void granted(Map<String, Object> ok, Granted g) {
            send(ok);
            granted = g;
            if (lostEarly) {
                sendLost(g);
            }
        }

        /** Marks the release begun: no lost event from now on. */
        synchronized void releasing() {
            answeredRelease = true;
        }

        private void sendLost(Granted g) {
            Map<String, Object> ev = new LinkedHashMap<>();
            ev.put("event", "lost");
            ev.put("lock", id);
            ev.put("key", key());
            ev.put("token", g.token);
            send(ev);
        }
    }

    // ---- output

    private static final Object OUT_MU = new Object();
    private static OutputStream out;
    private static final List<String> SECRETS = new ArrayList<>();

    static {
        String pw = System.getenv("LOCKBENCH_REDIS_PASSWORD");
        if (pw != null && !pw.isEmpty()) {
            SECRETS.add(pw);
        }
    }

    static String redact(String s) {
        for (String secret : SECRETS) {
            s = s.replace(secret, "***");
        }
        return s;
    }

    static void log(String msg) {
        System.err.println(redact(msg));
        System.err.flush();
    }

    /** Writes obj as one protocol line; exits at once when lockbench went away. */
    static void send(Map<String, Object> obj) {
        sendLine(Json.write(obj));
    }

    static void sendLine(String line) {
        byte[] b = (line + "\n").getBytes(StandardCharsets.UTF_8);
        synchronized (OUT_MU) {
            try {
                out.write(b);
                out.flush();
            } catch (IOException e) {
                Runtime.getRuntime().halt(0); // lockbench went away
            }
        }
    }

    static int envInt(String name, int dflt) {
        try {
            int v = Integer.parseInt(System.getenv().getOrDefault(name, ""));
            return v > 0 ? v : dflt;
        } catch (NumberFormatException e) {
            return dflt;
        }
    }

    static long num(Object v, long dflt) {
        return v instanceof Number ? ((Number) v).longValue() : dflt;
    }

    /** Only the class and message, redacted: never a stack trace. */
    static String describe(Throwable e) {
        String s = redact(e.getClass().getSimpleName() + ": " + e.getMessage());
        return s.length() > 300 ? s.substring(0, 300) : s;
    }

    private static Map<String, Object> answer(long id, boolean ok) {
        Map<String, Object> a = new LinkedHashMap<>();
        a.put("id", id);
        a.put("ok", ok);
        return a;
    }

    static Map<String, Object> error(long id, String kind, String message) {
        Map<String, Object> a = answer(id, false);
        a.put("error", kind);
        if (message != null) {
            a.put("message", message);
        }
        return a;
    }

    // ---- the loop

    static final class Loop {
        final Lock lock;
        final Object mu = new Object();
        final Map<Long, Ctx> pending = new HashMap<>(); // acquire id -> ctx, until answered
        final Map<Long, Ctx> held = new HashMap<>(); // acquire id -> ctx, while granted
        final ScheduledExecutorService timers;
        /**
         * A thread per acquire, from then on its lock's until released: as
         * many as locks wait or are held at once (an instance's workers),
         * reused afterwards, so that a cycle does not start a thread.
         */
        final ExecutorService threads;

        Loop(Lock lock) {
            this.lock = lock;
            ScheduledThreadPoolExecutor t = new ScheduledThreadPoolExecutor(1, r -> {
                Thread th = new Thread(r, "overdue");
                th.setDaemon(true);
                return th;
            });
            t.setRemoveOnCancelPolicy(true);
            this.timers = t;
            AtomicLong n = new AtomicLong();
            // A small stack: the thread only waits in the library's calls.
            this.threads = new ThreadPoolExecutor(0, Integer.MAX_VALUE, 30, TimeUnit.SECONDS, new SynchronousQueue<>(), r -> {
                Thread th = new Thread(null, r, "lock-" + n.incrementAndGet(), 512 << 10);
                th.setDaemon(true);
                return th;
            });
        }

        String classify(Throwable e) {
            try {
                String c = lock.classify(e);
                return c == null ? "error" : c;
            } catch (Throwable x) {
                return "error";
            }
        }

        /** Runs one acquire, and then its lock's release, on a pooled thread. */
        void runLock(Ctx ctx) {
            try {
                serve(ctx);
            } catch (Throwable e) {
                log("lock " + ctx.id + ": " + describe(e));
            }
        }

        private void serve(Ctx ctx) {
            Granted granted = null;
            Map<String, Object> ans = null;
            try {
                granted = lock.acquire(ctx.req, ctx);
            } catch (Throwable e) {
                ans = error(ctx.id, classify(e), describe(e));
            }
            boolean cancelled;
            synchronized (mu) {
                if (ctx.overdue != null) {
                    ctx.overdue.cancel(false);
                }
                pending.remove(ctx.id);
                cancelled = ctx.cancelled;
                if (granted != null && !cancelled) {
                    held.put(ctx.id, ctx);
                }
                ctx.answered = true;
            }
            if (cancelled) {
                // Already answered `cancelled`; a lock granted after that is nobody's.
                if (granted != null) {
                    try {
                        lock.release(granted.handle);
                    } catch (Throwable e) {
                        log("release after cancel: " + describe(e));
                    }
                }
                return;
            }
            if (granted == null) {
                send(ans != null ? ans : error(ctx.id, "not_acquired", null));
                return;
            }
            ans = answer(ctx.id, true);
            ans.put("token", granted.token);
            ans.put("waited", granted.waited);
            ctx.granted(ans, granted);
            // Serve this lock's release on this same thread until released.
            Map<String, Object> op;
            while (true) {
                try {
                    op = ctx.ops.take();
                    break;
                } catch (InterruptedException e) {
                    // a late cancel's interrupt; the lock is still held
                }
            }
            ctx.releasing();
            release(num(op.get("id"), -1), granted);
        }

        /**
         * Releases granted and answers release request id, or, when the
         * library is still at it OVERDUE_MS past RELEASE_MS, answers
         * lock.overdueRelease from the timer thread instead (the library's
         * late result is logged).
         */
        private void release(long id, Granted granted) {
            AtomicBoolean answered = new AtomicBoolean();
            ScheduledFuture<?> timer = null;
            try {
                timer = timers.schedule(() -> {
                    if (answered.compareAndSet(false, true)) {
                        String kind;
                        try {
                            kind = lock.overdueRelease(granted.handle);
                        } catch (Throwable e) {
                            kind = null;
                        }
                        send(error(id, kind == null ? "timeout" : kind, "no answer from the library "
                                + OVERDUE_MS + "ms past the release's " + RELEASE_MS + "ms"));
                    }
                }, RELEASE_MS + OVERDUE_MS, TimeUnit.MILLISECONDS);
            } catch (Throwable e) {
                log("release " + id + ": no overdue timer: " + describe(e));
            }
            Map<String, Object> ans;
            try {
                lock.release(granted.handle);
                ans = answer(id, true);
            } catch (Throwable e) {
                ans = error(id, classify(e), describe(e));
            }
            if (timer != null) {
                timer.cancel(false);
            }
            if (answered.compareAndSet(false, true)) {
                send(ans);
            } else {
                log("release " + id + " answered overdue; the library's own answer came later: " + Json.write(ans));
            }
        }

        void overdue(Ctx ctx) {
            synchronized (mu) {
                if (ctx.answered || ctx.cancelled) {
                    return;
                }
                ctx.cancelled = true;
                String kind;
                try {
                    kind = lock.overdue(ctx);
                } catch (Throwable e) {
                    kind = null;
                }
                send(error(ctx.id, kind == null ? "timeout" : kind,
                        "no answer from the library " + OVERDUE_MS + "ms past the acquire's timeout"));
            }
            cancel(ctx);
        }

        void cancel(Ctx ctx) {
            try {
                lock.cancel(ctx);
            } catch (Throwable e) {
                log("cancel: " + describe(e));
            }
        }

        void dispatch(Map<String, Object> req) {
            Object op = req.get("op");
            long id = num(req.get("id"), -1);
            if ("acquire".equals(op)) {
                acquire(req);
            } else if ("release".equals(op)) {
                long lockId = num(req.get("lock"), -1);
                Ctx ctx;
                synchronized (mu) {
                    ctx = held.remove(lockId);
                }
                if (ctx == null) {
                    send(error(id, "not_owner", "no such lock"));
                } else {
                    ctx.ops.add(req);
                }
            } else if ("extend".equals(op)) {
                send(error(id, "error", "extend not supported"));
            } else if ("cancel".equals(op)) {
                long target = num(req.get("target"), -1);
                Ctx ctx;
                synchronized (mu) {
                    ctx = pending.get(target);
                    if (ctx == null || ctx.cancelled) {
                        return;
                    }
                    ctx.cancelled = true;
                    send(error(target, "cancelled", null));
                }
                cancel(ctx);
            } else if (req.containsKey("id")) {
                send(error(id, "error", "unknown op " + op));
            }
        }

        /**
         * Starts an acquire on a pooled thread, its overdue timer set for
         * any timeout_ms (0 too: one attempt, which may block as long as a
         * longer one). An acquire that cannot start (no thread to be had)
         * is answered `error`, and forgotten.
         */
        private void acquire(Map<String, Object> req) {
            Ctx ctx = null;
            try {
                ctx = new Ctx(req);
                Ctx c = ctx;
                long timeout = num(req.get("timeout_ms"), -1);
                synchronized (mu) {
                    pending.put(c.id, c);
                    if (timeout >= 0) {
                        c.overdue = timers.schedule(() -> overdue(c), Math.min(timeout, 1L << 40) + OVERDUE_MS,
                                TimeUnit.MILLISECONDS);
                    }
                }
                threads.execute(() -> runLock(c));
            } catch (Throwable e) {
                long id = ctx != null ? ctx.id : num(req.get("id"), -1);
                synchronized (mu) {
                    if (ctx != null) {
                        pending.remove(ctx.id, ctx);
                        if (ctx.overdue != null) {
                            ctx.overdue.cancel(false);
                        }
                        if (ctx.answered || ctx.cancelled) {
                            return; // the overdue timer answered it
                        }
                        ctx.answered = true;
                    }
                    send(error(id, "error", "cannot start the acquire: " + describe(e)));
                }
            }
        }

        /**
         * Answers a request whose dispatch failed (not an acquire: that
         * answers for itself; nor a cancel, which has no answer), so that
         * the loop goes on.
         */
        void failed(Map<String, Object> req, Throwable e) {
            try {
                log("request failed: " + describe(e));
                Object op = req.get("op");
                if (req.containsKey("id") && !"acquire".equals(op) && !"cancel".equals(op)) {
                    send(error(num(req.get("id"), -1), "error", describe(e)));
                }
            } catch (Throwable x) {
                // nothing more to be done for it
            }
        }
    }

    /** Lock makes the adapter's lock, once the hello is out. */
    interface Factory {
        Lock make() throws Exception;
    }

    /**
     * Sends hello, and with --hello exits; otherwise makes the lock and serves
     * requests until stdin closes. Stdout is the protocol's alone: System.out
     * is pointed at stderr before any library can print to it.
     */
    static void run(String hello, String[] args, Factory factory) {
        out = new FileOutputStream(FileDescriptor.out);
        System.setOut(System.err);
        sendLine(hello);
        for (String a : args) {
            if (a.equals("--hello")) {
                Runtime.getRuntime().halt(0);
            }
        }
        Lock lock;
        try {
            lock = factory.make();
        } catch (Throwable e) {
            log("cannot start: " + describe(e));
            Runtime.getRuntime().halt(1);
            return;
        }
        Loop loop = new Loop(lock);
        try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
            String line;
            while ((line = in.readLine()) != null) {
                line = line.trim();
                if (line.isEmpty()) {
                    continue;
                }
                Object req;
                try {
                    req = Json.read(line);
                } catch (Throwable e) { // IllegalArgumentException; StackOverflowError when deeply nested
                    log("not JSON, ignored: " + (line.length() > 200 ? line.substring(0, 200) : line));
                    continue;
                }
                if (!(req instanceof Map)) {
                    log("not a JSON object, ignored: " + (line.length() > 200 ? line.substring(0, 200) : line));
                    continue;
                }
                @SuppressWarnings("unchecked")
                Map<String, Object> m = (Map<String, Object>) req;
                try {
                    loop.dispatch(m);
                } catch (Throwable e) {
                    loop.failed(m, e);
                }
            }
        } catch (Throwable e) {
            log("stdin: " + describe(e));
        }
        // stdin EOF: close the library's clients, bounded. Locks still
        // held go with them: closing Curator's client closes its session,
        // so ZooKeeper deletes the session's lock znodes at once.
        Thread closer = new Thread(lock::close, "close");
        closer.setDaemon(true);
        closer.start();
        try {
            closer.join(2000);
        } catch (InterruptedException e) {
            // exiting anyway
        }
        Runtime.getRuntime().halt(0);
    }

    // ---- JSON: enough for the protocol's lines (objects of strings, numbers, booleans)

    static final class Json {
        private final String s;
        private int i;

        private Json(String s) {
            this.s = s;
        }

        /** Parses one JSON value; IllegalArgumentException when s is not JSON. */
        static Object read(String s) {
            Json p = new Json(s);
            p.ws();
            Object v = p.value();
            p.ws();
            if (p.i != s.length()) {
                throw p.bad();
            }
            return v;
        }

        private IllegalArgumentException bad() {
            return new IllegalArgumentException("bad JSON at " + i);
        }

        private void ws() {
            while (i < s.length() && " \t\r\n".indexOf(s.charAt(i)) >= 0) {
                i++;
            }
        }

        private Object value() {
            if (i >= s.length()) {
                throw bad();
            }
            char c = s.charAt(i);
            switch (c) {
                case '{': {
                    i++;
                    Map<String, Object> m = new LinkedHashMap<>();
                    ws();
                    if (i < s.length() && s.charAt(i) == '}') {
                        i++;
                        return m;
                    }
                    while (true) {
                        ws();
                        if (i >= s.length() || s.charAt(i) != '"') {
                            throw bad();
                        }
                        String k = string();
                        ws();
                        expect(':');
                        ws();
                        m.put(k, value());
                        ws();
                        if (i < s.length() && s.charAt(i) == ',') {
                            i++;
                            continue;
                        }
                        expect('}');
                        return m;
                    }
                }
                case '[': {
                    i++;
                    List<Object> l = new ArrayList<>();
                    ws();
                    if (i < s.length() && s.charAt(i) == ']') {
                        i++;
                        return l;
                    }
                    while (true) {
                        ws();
                        l.add(value());
                        ws();
                        if (i < s.length() && s.charAt(i) == ',') {
                            i++;
                            continue;
                        }
                        expect(']');
                        return l;
                    }
                }
                case '"':
                    return string();
                case 't':
                    word("true");
                    return Boolean.TRUE;
                case 'f':
                    word("false");
                    return Boolean.FALSE;
                case 'n':
                    word("null");
                    return null;
                default:
                    return number();
            }
        }

        private void expect(char c) {
            if (i >= s.length() || s.charAt(i) != c) {
                throw bad();
            }
            i++;
        }

        private void word(String w) {
            if (!s.startsWith(w, i)) {
                throw bad();
            }
            i += w.length();
        }

        private Object number() {
            int start = i;
            boolean real = false;
            while (i < s.length()) {
                char c = s.charAt(i);
                if (c >= '0' && c <= '9' || c == '-' || c == '+') {
                    i++;
                } else if (c == '.' || c == 'e' || c == 'E') {
                    real = true;
                    i++;
                } else {
                    break;
                }
            }
            String n = s.substring(start, i);
            try {
                if (!real) {
                    return Long.parseLong(n);
                }
                return Double.parseDouble(n);
            } catch (NumberFormatException e) {
                throw bad();
            }
        }

        private String string() {
            expect('"');
            StringBuilder b = new StringBuilder();
            while (true) {
                if (i >= s.length()) {
                    throw bad();
                }
                char c = s.charAt(i++);
                if (c == '"') {
                    return b.toString();
                }
                if (c != '\\') {
                    b.append(c);
                    continue;
                }
                if (i >= s.length()) {
                    throw bad();
                }
                char e = s.charAt(i++);
                switch (e) {
                    case '"': b.append('"'); break;
                    case '\\': b.append('\\'); break;
                    case '/': b.append('/'); break;
                    case 'b': b.append('\b'); break;
                    case 'f': b.append('\f'); break;
                    case 'n': b.append('\n'); break;
                    case 'r': b.append('\r'); break;
                    case 't': b.append('\t'); break;
                    case 'u':
                        if (i + 4 > s.length()) {
                            throw bad();
                        }
                        try {
                            b.append((char) Integer.parseInt(s.substring(i, i + 4), 16));
                        } catch (NumberFormatException x) {
                            throw bad();
                        }
                        i += 4;
                        break;
                    default:
                        throw bad();
                }
            }
        }

        /** Writes a map of strings, integers and booleans as one JSON object. */
        static String write(Map<String, Object> m) {
            StringBuilder b = new StringBuilder(64);
            b.append('{');
            boolean first = true;
            for (Map.Entry<String, Object> e : m.entrySet()) {
                if (!first) {
                    b.append(',');
                }
                first = false;
                quote(b, e.getKey());
                b.append(':');
                Object v = e.getValue();
                if (v == null) {
                    b.append("null");
                } else if (v instanceof Number || v instanceof Boolean) {
                    b.append(v);
                } else {
                    quote(b, v.toString());
                }
            }
            return b.append('}').toString();
        }

        static void quote(StringBuilder b, String s) {
            b.append('"');
            for (int k = 0; k < s.length(); k++) {
                char c = s.charAt(k);
                switch (c) {
                    case '"': b.append("\\\""); break;
                    case '\\': b.append("\\\\"); break;
                    case '\n': b.append("\\n"); break;
                    case '\r': b.append("\\r"); break;
                    case '\t': b.append("\\t"); break;
                    default:
                        if (c < 0x20) {
                            b.append(String.format("\\u%04x", (int) c));
                        } else {
                            b.append(c);
                        }
                }
            }
            b.append('"');
        }
    }
}
