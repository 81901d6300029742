package rueidislock

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/redis/rueidis"

	"github.com/lockbench/lockbench/strategies"
	"github.com/lockbench/lockbench/strategies/redisutil"
)

// clientOption returns the rueidis client options for cfg's node, and its
// name for errors. The address, login and TLS come from package redisutil,
// as every Redis strategy's do (see the package doc). Only the dial timeout
// differs from rueidis' defaults: redisutil.DefaultDialTimeout (1s, not 5s),
// which also bounds the handshake (HELLO 3, CLIENT TRACKING), so that New
// fails within seconds with the server down.
func clientOption(cfg strategies.Config) (rueidis.ClientOption, string, error) {
	dialer := net.Dialer{Timeout: redisutil.DefaultDialTimeout}
	if len(cfg.RedisSentinels) > 0 {
		fo, err := redisutil.FailoverOptions(cfg)
		if err != nil {
			return rueidis.ClientOption{}, "", err
		}
		return rueidis.ClientOption{
			InitAddress: fo.SentinelAddrs,
			Username:    fo.Username,
			Password:    fo.Password,
			TLSConfig:   fo.TLSConfig,
			Dialer:      dialer,
			Sentinel: rueidis.SentinelOption{
				MasterSet: fo.MasterName,
				Username:  fo.SentinelUsername,
				Password:  fo.SentinelPassword,
				TLSConfig: fo.TLSConfig,
				Dialer:    dialer,
			},
		}, redisutil.PrimaryName(fo.MasterName), nil
	}
	if len(cfg.RedisAddrs) == 0 {
		return rueidis.ClientOption{}, "", fmt.Errorf("no Redis address in Config.RedisAddrs and no Sentinel in Config.RedisSentinels")
	}
	o, err := redisutil.ClientOptions(cfg.RedisAddrs[0], cfg)
	if err != nil {
		return rueidis.ClientOption{}, "", err
	}
	return rueidis.ClientOption{
		InitAddress: []string{o.Addr},
		Username:    o.Username,
		Password:    o.Password,
		TLSConfig:   o.TLSConfig, // nil without rediss://
		Dialer:      dialer,
	}, redisutil.EndpointName(cfg.RedisAddrs[0]), nil
}

// MinVersion is the oldest Redis the library works with at its defaults:
// 6.2, for SET … PXAT (FallbackSETPX off). RESP3 and client tracking,
// which its client-side caching needs, came with 6.0; rueidis refuses an
// older server when it connects (rueidis.ErrNoCache, see classify).
const MinVersion = "6.2"

// checkVersion asks the server its version (INFO server) and refuses one
// older than MinVersion, with one line that says why: on 6.0 and 6.1 every
// SET PXAT fails, and WithContext would wait for ever.
func checkVersion(ctx context.Context, c rueidis.Client, addr string) error {
	ictx, cancel := context.WithTimeout(ctx, redisutil.DefaultPingTimeout)
	defer cancel()
	info, err := c.Do(ictx, c.B().Info().Section("server").Build()).ToString()
	if err != nil {
		return fmt.Errorf("connect: %w", classify(ctx, addr, err))
	}
	v, ok := infoField(info, "redis_version")
	if !ok {
		return nil // not Redis' INFO; the keys' commands will tell
	}
	if older(v, MinVersion) {
		return fmt.Errorf("redis %s is version %s; rueidislock at its defaults needs %s or later (SET PXAT; RESP3 client-side caching from 6.0)", addr, v, MinVersion)
	}
	return nil
}

// infoField returns field's value in the text of INFO.
func infoField(info, field string) (string, bool) {
	for line := range strings.SplitSeq(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), field+":"); ok {
			return v, true
		}
	}
	return "", false
}

// older reports whether dotted version v is older than min. Parts that are
// not numbers count as 0.
func older(v, min string) bool {
	vs, ms := strings.Split(v, "."), strings.Split(min, ".")
	for i := range max(len(vs), len(ms)) {
		a, b := part(vs, i), part(ms, i)
		if a != b {
			return a < b
		}
	}
	return false
}

func part(parts []string, i int) int {
	if i >= len(parts) {
		return 0
	}
	n, _ := strconv.Atoi(parts[i])
	return n
}
