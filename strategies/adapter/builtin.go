package adapter

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/lockbench/lockbench/adapters"
	"github.com/lockbench/lockbench/strategies"
	"github.com/lockbench/lockbench/strategies/zklock"
)

// Python is the interpreter of the Python adapters: Debian's own, the one
// its python3-* packages install into, whatever python3 comes first on
// PATH.
const Python = "/usr/bin/python3"

// builtin is a shipped adapter: its script (for Java, its main class),
// and the hello it prints (TestBuiltinHellos holds the two together),
// which its registry entry is made of, so that listing strategies starts
// no process.
type builtin struct {
	runtime, script string
	// module is the Python module the adapter imports, and the Debian
	// package that has it. (A Java adapter's jars are adapters.JavaJars.)
	module, pkg string
	hello       string
	// order and color are its Info's.
	order int
	color string
}

// builtins are the shipped adapters, by name.
var builtins = map[string]builtin{
	"node-redlock": {order: 190, color: "#882255", runtime: adapters.Node, script: "node-redlock.js",
		hello: `{"hello":"lockbench-adapter","protocol":1,"name":"node-redlock","library":"redlock","library_version":"4.2.0","backend":"redis","nodes":5,"lease":"ttl","capabilities":{"token":false,"extend":true,"blocking":true}}`},
	"node-redis-semaphore": {order: 200, color: "#ee8866", runtime: adapters.Node, script: "node-redis-semaphore.js",
		hello: `{"hello":"lockbench-adapter","protocol":1,"name":"node-redis-semaphore","library":"redis-semaphore","library_version":"5.8.0","backend":"redis","nodes":1,"lease":"renewed","capabilities":{"token":false,"extend":false,"blocking":true}}`},
	"py-redis-lock": {order: 210, color: "#bbcc33", runtime: adapters.Python, script: "py_redis_lock.py", module: "redis", pkg: "python3-redis",
		hello: `{"hello":"lockbench-adapter","protocol":1,"name":"py-redis-lock","library":"redis-py","library_version":"4.3.4","backend":"redis","nodes":1,"lease":"ttl","capabilities":{"token":false,"extend":true,"blocking":true}}`},
	"py-kazoo": {order: 220, color: "#44bb99", runtime: adapters.Python, script: "py_kazoo.py", module: "kazoo", pkg: "python3-kazoo",
		hello: `{"hello":"lockbench-adapter","protocol":1,"name":"py-kazoo","library":"kazoo","library_version":"2.8","backend":"zookeeper","nodes":1,"lease":"session","capabilities":{"token":true,"extend":false,"blocking":true}}`},
	// Curator's InterProcessMutex (Debian's libcurator-recipes-java), its
	// token the lock znode's sequence number + 1, as py-kazoo's.
	"java-curator": {order: 230, color: "#4477aa", runtime: adapters.Java, script: "JavaCurator",
		hello: `{"hello":"lockbench-adapter","protocol":1,"name":"java-curator","library":"curator","library_version":"5.4.0","backend":"zookeeper","nodes":1,"lease":"session","capabilities":{"token":true,"extend":false,"blocking":true}}`},
}

// JavaFlags are the JVM's options for a Java adapter: the client compiler
// only (C1: it starts sooner, and the protocol loop's CPU per cycle is
// lower over a run's few thousand cycles than with C2 compiling on the
// side: BenchmarkAdapterProtocol/runtime=java), the serial collector and a small heap (an
// adapter holds a client and a thread per waiting acquire), and slf4j's
// simple binding at warn, on stderr, with the time of day. -Xrs: the JVM
// installs no handler for SIGINT, SIGTERM and SIGHUP, which then kill it
// by the signal, as they kill lockbench (with handlers it would exit
// 130/143/129, an exit that counts as adapter_lost). The JVM's own
// warnings (unified logging, on stdout by default) and other output go
// to stderr: stdout is the protocol's.
var JavaFlags = []string{
	"-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xmx128m", "-Xrs",
	"-Xlog:disable", "-Xlog:all=warning:stderr:uptime,level,tags", "-XX:+DisplayVMOutputToStderr",
	"-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
	"-Dorg.slf4j.simpleLogger.showDateTime=true",
	"-Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS",
}

// JavaEnvUnset are the variables of lockbench's environment a Java adapter
// does not get: the JVM (or its launcher) takes options from them, which
// could change JavaFlags' choices, and says so in a "Picked up" line.
var JavaEnvUnset = []string{"JAVA_TOOL_OPTIONS", "JDK_JAVA_OPTIONS", "_JAVA_OPTIONS"}

// JavaCommand is the command of the Java adapter whose main class is class,
// compiled in dir (adapters.Dir): Debian's java with JavaFlags, without
// JavaEnvUnset.
func JavaCommand(dir, class string) Command {
	args := append(append([]string{}, JavaFlags...), "-cp", adapters.JavaClasspath(dir), class)
	return Command{Path: adapters.JavaPath, Args: args, Dir: dir, Unset: JavaEnvUnset}
}

// ExecPrefix starts a strategy name that runs any adapter: exec:PATH
// [ARGS], arguments separated by blanks.
const ExecPrefix = "exec:"

func init() {
	for name, b := range builtins {
		h, err := parseHello([]byte(b.hello))
		if err != nil || h.Name != name {
			panic(fmt.Sprintf("adapter: built-in %s: bad hello: %v", name, err))
		}
		info := InfoOf(name, h, func(ctx context.Context) (Command, error) { return BuiltinCommand(ctx, name) })
		info.Order, info.Color = b.order, b.color
		strategies.Register(info)
	}
	strategies.RegisterResolver(ExecPrefix, resolveExec)
}

// InfoOf is the registry entry of an adapter called name that said hello
// h, whose command cmd returns: its Need, fencing when it has tokens, a
// lease kept alive while the holder runs when the library renews it or
// holds it by a session (ZooKeeper's, whose server grants the timeout as
// for package zklock).
func InfoOf(name string, h Hello, cmd func(ctx context.Context) (Command, error)) strategies.Info {
	info := strategies.Info{
		Name:         name,
		Description:  fmt.Sprintf("%s %s through an adapter (%s lease", h.Library, h.LibraryVersion, h.Lease),
		Need:         h.Need(),
		Fencing:      h.Capabilities.Token,
		CrossProcess: true,
		KeepAlive:    h.Lease != LeaseTTL,
		New: func(ctx context.Context, cfg strategies.Config) (strategies.Strategy, error) {
			c, err := cmd(ctx)
			if err != nil {
				return nil, err
			}
			s, err := New(ctx, c, cfg)
			if err != nil {
				return nil, err
			}
			return s, nil
		},
	}
	if h.Lease == LeaseSession && h.Backend == "zookeeper" {
		info.Lease = zklock.LeaseTTL
	}
	if h.Capabilities.Token {
		info.Description += ", fenced"
	}
	info.Description += ")"
	return info
}

// resolveExec resolves exec:PATH [ARGS] by running PATH ARGS --hello.
func resolveExec(name string) (strategies.Info, error) {
	args := strings.Fields(strings.TrimPrefix(name, ExecPrefix))
	if len(args) == 0 {
		return strategies.Info{}, fmt.Errorf("%q: want exec:PATH [ARGS]", name)
	}
	cmd := Command{Path: args[0], Args: args[1:]}
	h, err := ReadHello(context.Background(), cmd)
	if err != nil {
		return strategies.Info{}, err
	}
	info := InfoOf(ExecPrefix+h.Name, h, func(context.Context) (Command, error) { return cmd, nil })
	info.Ref = name
	return info, nil
}

// IsBuiltin reports whether name is a shipped adapter.
func IsBuiltin(name string) bool {
	_, ok := builtins[name]
	return ok
}

// BuiltinCommand is the command of the shipped adapter called name, its
// scripts unpacked (package adapters) and its runtime checked: a missing
// one is one line saying what to install.
func BuiltinCommand(ctx context.Context, name string) (Command, error) {
	b, ok := builtins[name]
	if !ok {
		return Command{}, fmt.Errorf("adapter: no built-in adapter %q", name)
	}
	if err := checkRuntime(ctx, name, b); err != nil {
		return Command{}, err
	}
	dir, err := adapters.Dir(ctx, b.runtime)
	if err != nil {
		return Command{}, fmt.Errorf("%s: %v", name, err)
	}
	switch b.runtime {
	case adapters.Node:
		return Command{Path: "node", Args: []string{filepath.Join(dir, b.script)}, Dir: dir}, nil
	case adapters.Java:
		return JavaCommand(dir, b.script), nil
	}
	return Command{Path: Python, Args: []string{filepath.Join(dir, b.script)}, Dir: dir}, nil
}

// moduleTimeout bounds the check that Python has an adapter's module: 10
// seconds.
const moduleTimeout = 10 * time.Second

var (
	runtimeMu sync.Mutex
	runtimeOK = map[string]bool{}
)

// checkRuntime says, in one line, what to install for adapter name to
// run; nil when nothing. A passed check is not made again.
func checkRuntime(ctx context.Context, name string, b builtin) error {
	runtimeMu.Lock()
	defer runtimeMu.Unlock()
	if runtimeOK[name] {
		return nil
	}
	switch b.runtime {
	case adapters.Node:
		if _, err := exec.LookPath("node"); err != nil {
			return fmt.Errorf("%s needs node (20 or later) on PATH: apt-get install -y nodejs npm", name)
		}
	case adapters.Java:
		// java and the jars; javac too when the adapters are not compiled
		// yet (adapters.Dir says so).
		if err := adapters.CheckJava(adapters.JavaPath); err != nil {
			return fmt.Errorf("%s: %v", name, err)
		}
	default:
		if _, err := exec.LookPath(Python); err != nil {
			return fmt.Errorf("%s needs Debian's python3 at %s: apt-get install -y python3 %s", name, Python, b.pkg)
		}
		ctx, cancel := context.WithTimeout(ctx, moduleTimeout)
		defer cancel()
		if err := exec.CommandContext(ctx, Python, "-c", "import "+b.module).Run(); err != nil {
			return fmt.Errorf("%s needs Debian's %s: apt-get install -y %s", name, b.pkg, b.pkg)
		}
	}
	runtimeOK[name] = true
	return nil
}
