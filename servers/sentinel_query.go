package servers

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// primaryForStart is the primary a starting data node replicates from: the
// one the Sentinels name, asked again for up to primaryAskTimeout while
// they disagree (right after a failover: a node started as the primary on
// a stale answer would be a second master), then the one a majority
// names; the last one they named when none answers (before they run: the
// first primary).
func (g *sentinelGroup) primaryForStart() string {
	if len(g.sentinels) > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), primaryAskTimeout)
		defer cancel()
		majority := ""
		for ctx.Err() == nil {
			addr, unanimous, err := g.votes(ctx)
			if err == nil && unanimous {
				return addr
			}
			if err == nil {
				majority = addr
			}
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
		if majority != "" {
			return majority
		}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.lastPrimary
}

// primaryAddr is the primary a majority of the group's Sentinels name.
func (g *sentinelGroup) primaryAddr(ctx context.Context) (string, error) {
	addr, _, err := g.votes(ctx)
	return addr, err
}

// votes is primaryVotes for the group's Sentinels.
func (g *sentinelGroup) votes(ctx context.Context) (string, bool, error) {
	addr, unanimous, err := primaryVotes(ctx, g.sentinelAddrs(), g.master, g.secure)
	if err == nil {
		g.mu.Lock()
		g.lastPrimary = addr
		g.mu.Unlock()
	}
	return addr, unanimous, err
}

func (g *sentinelGroup) sentinelAddrs() []string {
	addrs := make([]string, len(g.sentinels))
	for i, s := range g.sentinels {
		addrs[i] = s.Addr
	}
	return addrs
}

// PrimaryAddr asks every Sentinel at sentinels for the address of the
// primary they know as master and returns the one a majority of them name.
// Sentinels learn of a failover from its leader within a second or two, so
// right after one a single Sentinel's answer can be stale, and a node
// started as the primary on such an answer would be a second master.
func PrimaryAddr(ctx context.Context, sentinels []string, master string) (string, error) {
	addr, _, err := primaryVotes(ctx, sentinels, master, nil)
	return addr, err
}

// primaryVotes is PrimaryAddr, and whether every Sentinel that answered
// named the same primary.
func primaryVotes(ctx context.Context, sentinels []string, master string, sec *Secure) (addr string, unanimous bool, err error) {
	votes := map[string]int{}
	var errs []error
	for _, addr := range sentinels {
		actx, cancel := context.WithTimeout(ctx, sentinelAskTimeout)
		hp, err := askSentinel(actx, addr, sec, func(c *redis.SentinelClient) ([]string, error) {
			return c.GetMasterAddrByName(actx, master).Result()
		})
		cancel()
		if err == nil && len(hp) == 2 {
			votes[net.JoinHostPort(hp[0], hp[1])]++
			continue
		}
		errs = append(errs, fmt.Errorf("sentinel %s: %v", addr, err))
		if ctx.Err() != nil {
			break
		}
	}
	for addr, n := range votes {
		if n > len(sentinels)/2 {
			return addr, len(votes) == 1, nil
		}
	}
	if len(votes) > 1 {
		errs = append(errs, fmt.Errorf("the Sentinels disagree: %v", votes))
	}
	return "", false, fmt.Errorf("servers: no majority of the Sentinels named the primary %q: %w", master, errors.Join(errs...))
}

// ForceFailover asks the Sentinels, in turn until one starts it, for a
// failover without agreement (SENTINEL FAILOVER): what an operator does
// when the Sentinels would not fail over on their own yet (a vote that
// split is retried only after twice the failover timeout).
func ForceFailover(ctx context.Context, sentinels []string, master string) error {
	var errs []error
	for _, addr := range sentinels {
		_, err := askSentinel(ctx, addr, nil, func(c *redis.SentinelClient) (string, error) {
			return c.Failover(ctx, master).Result()
		})
		if err == nil {
			return nil
		}
		errs = append(errs, fmt.Errorf("sentinel %s: %w", addr, err))
	}
	return fmt.Errorf("servers: no Sentinel started a failover of %q: %w", master, errors.Join(errs...))
}

// askSentinel runs f on a one-connection client of the Sentinel at addr,
// with sec's TLS and login when sec is set.
func askSentinel[T any](ctx context.Context, addr string, sec *Secure, f func(c *redis.SentinelClient) (T, error)) (T, error) {
	o, err := probeOptions(addr, sec)
	if err != nil {
		var zero T
		return zero, err
	}
	c := redis.NewSentinelClient(o)
	defer c.Close()
	return f(c)
}

// probeOptions are the options of lockbench's own one-connection clients
// of a node at addr: short timeouts, no retries, and sec's TLS and login
// when sec is set.
func probeOptions(addr string, sec *Secure) (*redis.Options, error) {
	o := &redis.Options{
		Addr: addr, PoolSize: 1, MaxRetries: -1, DialTimeout: sentinelAskTimeout,
		ReadTimeout: sentinelAskTimeout, WriteTimeout: sentinelAskTimeout, ContextTimeoutEnabled: true,
		Protocol: 2, DisableIdentity: true,
	}
	if sec == nil {
		return o, nil
	}
	tc, err := sec.clientTLS()
	if err != nil {
		return nil, err
	}
	o.TLSConfig = tc
	if sec.auth() {
		o.Username, o.Password = sec.user(), sec.Password
	}
	return o, nil
}

// pingAs sends one PING to the node at addr, with sec's TLS and login
// when sec is set (the plain probe, pingRedis, otherwise).
func pingAs(ctx context.Context, addr string, sec *Secure) error {
	if sec == nil {
		return pingRedis(ctx, addr)
	}
	o, err := probeOptions(addr, sec)
	if err != nil {
		return err
	}
	c := redis.NewClient(o)
	defer c.Close()
	return c.Ping(ctx).Err()
}

// redisInfo returns one INFO section of the node at addr as key → value.
func redisInfo(ctx context.Context, addr, section string) (map[string]string, error) {
	return redisInfoAs(ctx, addr, section, nil)
}

// redisInfoAs is redisInfo with sec's TLS and login when sec is set.
func redisInfoAs(ctx context.Context, addr, section string, sec *Secure) (map[string]string, error) {
	o, err := probeOptions(addr, sec)
	if err != nil {
		return nil, err
	}
	c := redis.NewClient(o)
	defer c.Close()
	text, err := c.Info(ctx, section).Result()
	if err != nil {
		return nil, err
	}
	return ParseInfo(text), nil
}

// ParseInfo is the key → value lines of an INFO reply.
func ParseInfo(text string) map[string]string {
	out := map[string]string{}
	for line := range strings.SplitSeq(text, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			out[k] = v
		}
	}
	return out
}
