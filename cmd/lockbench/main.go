// Command lockbench compares distributed-lock strategies for speed and
// safety. See the README and `lockbench help`.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/redis/go-redis/v9/logging"

	"github.com/lockbench/lockbench/bench/cli"
	"github.com/lockbench/lockbench/loadgen"
	_ "github.com/lockbench/lockbench/servers/etcdchild" // the binary is its own etcd
	_ "github.com/lockbench/lockbench/strategies/all"
)

func main() {
	// Dial failures during node faults are expected and counted per run;
	// go-redis would also print each one.
	logging.Disable()
	loadgen.MaybeRunChild()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		// After the first Ctrl-C, a second one kills at once; the servers and
		// instances die with us (Pdeathsig).
		<-ctx.Done()
		stop()
	}()
	err := cli.Run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(cli.ExitCode(err, os.Stderr))
}
