package servers

import (
	"os"
	"strings"
)

// EndpointsFromEnv reads existing servers' endpoints from EnvRedisAddrs,
// EnvRedisPassword, EnvRedisSentinels, EnvRedisMaster, EnvEtcdEndpoints,
// EnvPostgresDSN, EnvZKServers and EnvNATSURL.
// Lists are comma-separated; blanks around items and empty items are
// ignored.
func EndpointsFromEnv() Endpoints {
	return Endpoints{
		RedisAddrs:     splitList(os.Getenv(EnvRedisAddrs)),
		RedisPassword:  os.Getenv(EnvRedisPassword),
		RedisSentinels: splitList(os.Getenv(EnvRedisSentinels)),
		RedisMaster:    strings.TrimSpace(os.Getenv(EnvRedisMaster)),
		EtcdEndpoints:  splitList(os.Getenv(EnvEtcdEndpoints)),
		PostgresDSN:    strings.TrimSpace(os.Getenv(EnvPostgresDSN)),
		ZKServers:      splitList(os.Getenv(EnvZKServers)),
		NATSURL:        strings.TrimSpace(os.Getenv(EnvNATSURL)),
	}
}

// Env returns the endpoints as KEY=value lines that EndpointsFromEnv reads
// back, one per kind of server named (what `lockbench up` prints). Values are
// verbatim, not shell-quoted, and include the Redis password and the DSN
// with its password: pass anything that is logged through Redact.
func (e Endpoints) Env() []string {
	var lines []string
	if len(e.RedisAddrs) > 0 {
		lines = append(lines, EnvRedisAddrs+"="+strings.Join(e.RedisAddrs, ","))
	}
	if e.RedisPassword != "" {
		lines = append(lines, EnvRedisPassword+"="+e.RedisPassword)
	}
	if len(e.RedisSentinels) > 0 {
		lines = append(lines, EnvRedisSentinels+"="+strings.Join(e.RedisSentinels, ","))
	}
	if e.RedisMaster != "" {
		lines = append(lines, EnvRedisMaster+"="+e.RedisMaster)
	}
	if len(e.EtcdEndpoints) > 0 {
		lines = append(lines, EnvEtcdEndpoints+"="+strings.Join(e.EtcdEndpoints, ","))
	}
	if e.PostgresDSN != "" {
		lines = append(lines, EnvPostgresDSN+"="+e.PostgresDSN)
	}
	if len(e.ZKServers) > 0 {
		lines = append(lines, EnvZKServers+"="+strings.Join(e.ZKServers, ","))
	}
	if e.NATSURL != "" {
		lines = append(lines, EnvNATSURL+"="+e.NATSURL)
	}
	return lines
}

func splitList(s string) []string {
	var out []string
	for item := range strings.SplitSeq(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}
