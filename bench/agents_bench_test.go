package bench

import (
	"context"
	"net"
	"testing"

	"github.com/lockbench/lockbench/loadgen"
	"github.com/lockbench/lockbench/loadgen/agent"
)

// benchAgentToken is the token of the benchmark's agents.
const benchAgentToken = "bench-agent-token"

// startBenchAgents serves n agents in this process on loopback (their
// instance processes are this binary again) and opens a pool on them.
func startBenchAgents(b *testing.B, n int) *agent.Pool {
	b.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var addrs []agent.Target
	var done []chan struct{}
	for range n {
		a, err := agent.New(agent.Config{Token: benchAgentToken})
		if err != nil {
			b.Fatal(err)
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		addrs = append(addrs, agent.Target{Addr: ln.Addr().String()})
		d := make(chan struct{})
		done = append(done, d)
		go func() { defer close(d); _ = a.Serve(ctx, ln) }()
	}
	pool, err := agent.Open(ctx, addrs, agent.PoolConfig{DialConfig: agent.DialConfig{Token: benchAgentToken}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = pool.Close()
		cancel()
		for _, d := range done {
			<-d
		}
	})
	return pool
}

// BenchmarkAgentTransport is BenchmarkProcessTransport's load (2
// instances × 8 workers, one delivery per payment, no hold, the memory
// store, closed loop) with the instance processes on two agents on this
// host, beside the same load with local instance processes: what the
// agents' hop (deliveries and reports relayed by the agent, the store over
// loopback TCP instead of a Unix socket) costs. payments/cpu-s counts the
// CPU of this process and its children, the agents' instances among them.
func BenchmarkAgentTransport(b *testing.B) {
	for _, name := range []string{"nolock", "setnx"} {
		lock, ok := transportLock(b, name)
		if !ok {
			continue
		}
		for _, where := range []string{"process", "agents"} {
			b.Run("strategy="+name+"/mode="+where, func(b *testing.B) {
				var sp loadgen.Spawner
				if where == "agents" {
					sp = startBenchAgents(b, 2)
				}
				runTransport(b, name, "process", loadgen.TransportSync, lock, sp)
			})
		}
	}
}
