package faults

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockbench/lockbench/loadgen/store"
	"github.com/lockbench/lockbench/strategies/redisutil"
)

// checkTimeout bounds the trap's look at a cut-off node: 200ms.
const checkTimeout = 200 * time.Millisecond

// The split of restart-node and clock-jump on a multi-node lock (see the
// package documentation): the nodes after the first quorum are refused to
// the caught holder, so that the failed node is in both majorities.

// setupSplit puts proxies in front of the nodes after the first quorum.
func (s *strike) setupSplit(n int) error {
	q := n/2 + 1
	if n%2 == 0 {
		return fmt.Errorf("%s: split=on needs an odd number of Redis nodes (%d used); with an even number two nodes would have to fail (use split=off)", s.name, n)
	}
	if s.cfg.index >= q {
		return fmt.Errorf("%s: with split=on the failed node must be one of the first quorum, 0..%d (node=%d)", s.name, q-1, s.cfg.index)
	}
	lock := &s.env.Lock
	lock.RedisAddrs = append([]string(nil), lock.RedisAddrs...)
	for i := q; i < n; i++ {
		addr := lock.RedisAddrs[i]
		p, err := newProxy(fmt.Sprintf("redis-%d", i), addr)
		if err != nil {
			return err
		}
		s.cut = append(s.cut, p)
		s.cutIdx = append(s.cutIdx, i)
		s.checks = append(s.checks, redis.NewClient(redisutil.Options(addr, lock.RedisPassword)))
		lock.RedisAddrs[i] = p.Addr()
	}
	return nil
}

// holdsFirstQuorumOnly makes sure the holder's lock is on none of the cut
// nodes (an acquisition in flight when they were cut may have reached them).
func (s *strike) holdsFirstQuorumOnly(r store.EnterReq) bool {
	ctx, cancel := context.WithTimeout(context.Background(), checkTimeout)
	defer cancel()
	key := redisutil.LockKey(r.LockKey)
	for _, c := range s.checks {
		if n, err := c.Exists(ctx, key).Result(); err != nil || n != 0 {
			return false
		}
	}
	return true
}

func (s *strike) cutNames() string {
	var names []string
	for _, i := range s.cutIdx {
		names = append(names, fmt.Sprintf("redis-%d", i))
	}
	return strings.Join(names, ", ")
}

// heal lets the cut nodes be reached again.
func (s *strike) heal() error {
	var errs []error
	for _, p := range s.cut {
		errs = append(errs, p.accept())
	}
	return errors.Join(errs...)
}

func (s *strike) closeSplit() {
	for _, p := range s.cut {
		p.close()
	}
	for _, c := range s.checks {
		_ = c.Close()
	}
}
