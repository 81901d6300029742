package agent_test

import (
	"context"
	"fmt"

	"github.com/lockbench/lockbench/loadgen/agent"
)

// A --agents value: addresses as given, each once; a name would stand for
// every address it resolves to.
func ExampleSplitAddrs() {
	targets, err := agent.SplitAddrs(context.Background(), "127.0.0.2:7070, 127.0.0.3:7070,127.0.0.2:7070")
	fmt.Println(targets, err)
	// Output: [127.0.0.2:7070 127.0.0.3:7070] <nil>
}
