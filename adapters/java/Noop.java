// Grants every acquire at once: measures what the protocol itself costs
// (the Java counterpart of adapters/python/noop.py and adapters/node/noop.js).

import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;

public final class Noop implements Protocol.Lock {
    static final String HELLO = "{\"hello\":\"lockbench-adapter\",\"protocol\":1,\"name\":\"java-noop\","
            + "\"library\":\"none\",\"library_version\":\"0\",\"backend\":\"none\",\"nodes\":0,"
            + "\"lease\":\"ttl\",\"capabilities\":{\"token\":true,\"extend\":false,\"blocking\":false}}";

    public static void main(String[] args) {
        Protocol.run(HELLO, args, Noop::new);
    }

    private final AtomicLong counter = new AtomicLong();

    @Override
    public Protocol.Granted acquire(Map<String, Object> req, Protocol.Ctx ctx) {
        long n = counter.incrementAndGet();
        return new Protocol.Granted(n, n, false);
    }

    @Override
    public void release(Object handle) {}

    @Override
    public String classify(Throwable e) {
        return "error";
    }
}
