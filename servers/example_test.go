package servers_test

import (
	"context"
	"fmt"
	"log"

	"github.com/lockbench/lockbench/servers"
)

func ExampleRedact() {
	fmt.Println(servers.Redact("postgres://app:hunter2@db.internal:5432/bank"))
	fmt.Println(servers.Redact("host=db.internal user=app password=hunter2"))
	// Output:
	// postgres://app:xxxxx@db.internal:5432/bank
	// host=db.internal user=app password=xxxxx
}

func ExampleEndpoints_Env() {
	ep := servers.Endpoints{
		RedisAddrs:    []string{"127.0.0.1:6379", "127.0.0.1:6380"},
		EtcdEndpoints: []string{"http://127.0.0.1:2379"},
	}
	for _, line := range ep.Env() {
		fmt.Println(line)
	}
	// Output:
	// LOCKBENCH_REDIS_ADDRS=127.0.0.1:6379,127.0.0.1:6380
	// LOCKBENCH_ETCD_ENDPOINTS=http://127.0.0.1:2379
}

// Ensure uses the servers named in the environment and starts the rest.
func ExampleEnsure() {
	ctx := context.Background()
	ep, cluster, err := servers.Ensure(ctx, servers.Needs{Redis: 5, Etcd: true}, servers.EndpointsFromEnv(), servers.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer cluster.Stop() // a nil Cluster's Stop does nothing
	for _, line := range ep.Env() {
		fmt.Println(servers.Redact(line))
	}
}
