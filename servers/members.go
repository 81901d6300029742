package servers

import (
	"context"
	"errors"
	"sync"
)

// member is one server of a replicated cluster (an etcd member, a
// ZooKeeper server): what startMembers needs of it.
type member interface {
	start(ctx context.Context) error
	kill() error
}

// startMembers starts all members of a cluster in parallel (they form a
// quorum only together, so none can come up alone) and waits until each has
// started or failed. When any failed it kills them all and returns the
// failures joined (errors.Join).
func startMembers[M member](ctx context.Context, members []M) error {
	errs := make([]error, len(members))
	var wg sync.WaitGroup
	for i, m := range members {
		wg.Go(func() { errs[i] = m.start(ctx) })
	}
	wg.Wait()
	err := errors.Join(errs...)
	if err != nil {
		for _, m := range members {
			_ = m.kill()
		}
	}
	return err
}
