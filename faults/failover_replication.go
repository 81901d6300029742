package faults

import (
	"context"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockbench/lockbench/servers"
	"github.com/lockbench/lockbench/strategies"
)

// awaitPromotion waits until the Sentinels of target name a primary other
// than old, forcing a failover after promote.
func awaitPromotion(ctx context.Context, target servers.Target, old string, promote time.Duration) (addr, how string, err error) {
	cfg := target.Config
	began := time.Now()
	deadline := began.Add(promote)
	forced, forceErr := false, "not yet tried"
	for {
		actx, cancel := context.WithTimeout(ctx, time.Second)
		addr, err := servers.PrimaryAddr(actx, cfg.RedisSentinels, cfg.RedisMaster)
		cancel()
		if err == nil && addr != old {
			if forced {
				return addr, "(failover forced after " + ms(promote) + ")", nil
			}
			return addr, "by the Sentinels", nil
		}
		if err == nil {
			err = fmt.Errorf("the Sentinels still name %s", addr)
		}
		switch {
		case ctx.Err() != nil:
			// The fault was stopped first (the load ended): say how far
			// the failover got.
			return "", "", fmt.Errorf("%s: %w", servers.Redact(fmt.Sprintf("no replica promoted %s after the kill, when the fault was stopped (forced failover: %s; last answer: %v)",
				ms(time.Since(began)), forceErr, err)), ctx.Err())
		case time.Now().After(deadline) && !forced:
			ferr := servers.ForceFailover(ctx, cfg.RedisSentinels, cfg.RedisMaster)
			forced, forceErr = ferr == nil, "started"
			if ferr != nil {
				forceErr = ferr.Error()
			}
			deadline = time.Now().Add(promote)
		case time.Now().After(deadline):
			return "", "", fmt.Errorf("no replica promoted %s after a forced failover (last answer: %v)", ms(promote), err)
		}
		strategies.Sleep(ctx, 50*time.Millisecond)
	}
}

// names names the members for an event: "redis-1 (…) and redis-2 (…)".
func names(ms []servers.Member) string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Node.Name()
	}
	return strings.Join(out, " and ")
}

// replicaOf sends REPLICAOF addr to the node behind c.
func replicaOf(ctx context.Context, c *redis.Client, addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	return c.Do(ctx, "REPLICAOF", host, port).Err()
}

// awaitLink waits until the replica behind c replicates from addr with its
// link up.
func awaitLink(ctx context.Context, c *redis.Client, addr string) error {
	ctx, cancel := context.WithTimeout(ctx, relinkTimeout)
	defer cancel()
	var last string
	for {
		info, err := replicationInfo(ctx, c)
		if err == nil {
			last = fmt.Sprintf("master %s:%s, link %s", info["master_host"], info["master_port"], info["master_link_status"])
			if net.JoinHostPort(info["master_host"], info["master_port"]) == addr && info["master_link_status"] == "up" {
				return nil
			}
		}
		if !strategies.Sleep(ctx, 10*time.Millisecond) {
			return fmt.Errorf("link not up within %s (%s)", ms(relinkTimeout), last)
		}
	}
}

// replicationInfo is INFO replication of the node behind c.
func replicationInfo(ctx context.Context, c *redis.Client) (map[string]string, error) {
	text, err := c.Info(ctx, "replication").Result()
	if err != nil {
		return nil, err
	}
	return servers.ParseInfo(text), nil
}
