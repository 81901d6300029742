package servers

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// waitFormed waits until every replica's link to the primary is up and
// every Sentinel knows both replicas and the other Sentinels.
func (g *sentinelGroup) waitFormed(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, sentinelReadyTimeout)
	defer cancel()
	var last error
	for {
		if last = g.formed(ctx); last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not formed after %v: %v", sentinelReadyTimeout, last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (g *sentinelGroup) formed(ctx context.Context) error {
	for _, r := range g.nodes[1:] {
		info, err := redisInfoAs(ctx, r.Addr, "replication", g.secure)
		if err != nil {
			return fmt.Errorf("%s: %v", r.name, err)
		}
		if info["master_link_status"] != "up" {
			return fmt.Errorf("%s: master_link_status %q", r.name, info["master_link_status"])
		}
	}
	for _, s := range g.sentinels {
		m, err := askSentinel(ctx, s.Addr, g.secure, func(c *redis.SentinelClient) (map[string]string, error) {
			return c.Master(ctx, g.master).Result()
		})
		if err != nil {
			return fmt.Errorf("%s: %v", s.name, err)
		}
		if m["num-slaves"] != strconv.Itoa(SentinelReplicas) || m["num-other-sentinels"] != strconv.Itoa(SentinelCount-1) {
			return fmt.Errorf("%s knows %s replicas and %s other Sentinels", s.name, m["num-slaves"], m["num-other-sentinels"])
		}
	}
	return nil
}

// Member is one data node of a replicated Redis lockbench started.
type Member struct {
	// Node is the server, for a fault to kill and start again.
	Node Node
	// Addr is its address, 127.0.0.1:port.
	Addr string
}

// Replicated reports whether the target is a replicated Redis behind
// Sentinels (Config.RedisSentinels).
func (t Target) Replicated() bool { return len(t.Config.RedisSentinels) > 0 }

// Roles returns the current primary of a replicated Redis lockbench
// started and the other data nodes (its replicas, or nodes that are down),
// in the order of Nodes, once the group has settled: the Sentinels all
// name the primary and see it up with no failover under way, it says it is
// one, and no other node that runs says it is one too. Right after a failover, or after every
// node was restarted at once, a node can believe itself a primary for a
// few seconds (until the Sentinels convert it); Roles waits that out, for
// up to settleTimeout.
func (t Target) Roles(ctx context.Context) (primary Member, others []Member, err error) {
	if !t.Replicated() {
		return primary, nil, errors.New("servers: not a replicated Redis (set --redis-topology sentinel)")
	}
	if t.group == nil {
		return primary, nil, fmt.Errorf("%w: the Sentinels were given (%s)", ErrNotLocal, t.Given())
	}
	ctx, cancel := context.WithTimeout(ctx, settleTimeout)
	defer cancel()
	for {
		if primary, others, err = t.group.roles(ctx); err == nil {
			return primary, others, nil
		}
		select {
		case <-ctx.Done():
			return primary, nil, fmt.Errorf("servers: the replicated Redis has not settled: %w", err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// roles is one look at the group for Roles.
func (g *sentinelGroup) roles(ctx context.Context) (primary Member, others []Member, err error) {
	addr, unanimous, err := g.votes(ctx)
	if err != nil {
		return primary, nil, err
	}
	if !unanimous {
		return primary, nil, errors.New("the Sentinels do not all name the same primary yet")
	}
	for _, sn := range g.sentinels {
		m, err := askSentinel(ctx, sn.Addr, g.secure, func(c *redis.SentinelClient) (map[string]string, error) {
			return c.Master(ctx, g.master).Result()
		})
		if err != nil {
			return primary, nil, fmt.Errorf("%s: %v", sn.name, err)
		}
		if m["flags"] != "master" { // s_down, o_down, failover_in_progress…
			return primary, nil, fmt.Errorf("%s sees the primary as %q", sn.name, m["flags"])
		}
	}
	found := false
	for _, r := range g.nodes {
		m := Member{Node: r, Addr: r.Addr}
		info, ierr := redisInfoAs(ctx, r.Addr, "replication", g.secure)
		switch {
		case r.Addr == addr:
			if ierr != nil || info["role"] != "master" {
				return primary, nil, fmt.Errorf("the Sentinels name %s, which is not a primary (role %q, %v)", r.name, info["role"], ierr)
			}
			primary, found = m, true
			continue
		case ierr == nil && info["role"] == "master":
			return primary, nil, fmt.Errorf("%s is a second primary beside %s", r.name, addr)
		}
		others = append(others, m)
	}
	if !found {
		return primary, nil, fmt.Errorf("the Sentinels name %s as primary, which is none of the group's nodes", addr)
	}
	return primary, others, nil
}

// byRole is the group's nodes with the current primary first (Node(0) is
// what a single-node strategy uses), or nil when the Sentinels do not say.
func (t Target) byRole() []Member {
	ctx, cancel := context.WithTimeout(context.Background(), 2*sentinelAskTimeout)
	defer cancel()
	p, others, err := t.Roles(ctx)
	if err != nil {
		return nil
	}
	return append([]Member{p}, others...)
}
