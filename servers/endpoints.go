package servers

import (
	"os"
	"strings"

	"github.com/lockbench/lockbench/strategies"
)

// EndpointsFromEnv reads existing servers' endpoints from EnvRedisAddrs,
// EnvRedisPassword, EnvRedisSentinels, EnvRedisMaster, EnvEtcdEndpoints,
// EnvPostgresDSN, EnvZKServers, EnvNATSURL and EnvMySQLDSN, and how to log in to them
// from EnvRedisCACert, EnvEtcdCACert, EnvEtcdCert, EnvEtcdKey, EnvEtcdUser
// and EnvEtcdPassword. Lists are comma-separated; blanks around items and
// empty items are ignored. Passwords are taken verbatim.
func EndpointsFromEnv() Endpoints {
	path := func(k string) string { return strings.TrimSpace(os.Getenv(k)) }
	return Endpoints{
		RedisAddrs:     splitList(os.Getenv(EnvRedisAddrs)),
		RedisPassword:  os.Getenv(EnvRedisPassword),
		RedisCACert:    path(EnvRedisCACert),
		RedisSentinels: splitList(os.Getenv(EnvRedisSentinels)),
		RedisMaster:    strings.TrimSpace(os.Getenv(EnvRedisMaster)),
		EtcdEndpoints:  splitList(os.Getenv(EnvEtcdEndpoints)),
		EtcdCACert:     path(EnvEtcdCACert),
		EtcdCert:       path(EnvEtcdCert),
		EtcdKey:        path(EnvEtcdKey),
		EtcdUser:       strings.TrimSpace(os.Getenv(EnvEtcdUser)),
		EtcdPassword:   os.Getenv(EnvEtcdPassword),
		PostgresDSN:    strings.TrimSpace(os.Getenv(EnvPostgresDSN)),
		ZKServers:      splitList(os.Getenv(EnvZKServers)),
		NATSURL:        strings.TrimSpace(os.Getenv(EnvNATSURL)),
		MySQLDSN:       strings.TrimSpace(os.Getenv(EnvMySQLDSN)),
	}
}

// credentials returns the part of a lock config that says how to log in to
// the servers rather than where they are: the Redis password and CA, the
// etcd CA, client certificate, user and password. Every target's config
// carries it, whichever backend the target uses.
func (e Endpoints) credentials() strategies.Config {
	return strategies.Config{
		RedisPassword: e.RedisPassword,
		RedisCACert:   e.RedisCACert,
		EtcdCACert:    e.EtcdCACert,
		EtcdCert:      e.EtcdCert,
		EtcdKey:       e.EtcdKey,
		EtcdUser:      e.EtcdUser,
		EtcdPassword:  e.EtcdPassword,
	}
}

// withCredentials returns c with e's credentials (see credentials) set.
func (e Endpoints) withCredentials(c strategies.Config) strategies.Config {
	k := e.credentials()
	c.RedisPassword, c.RedisCACert = k.RedisPassword, k.RedisCACert
	c.EtcdCACert, c.EtcdCert, c.EtcdKey = k.EtcdCACert, k.EtcdCert, k.EtcdKey
	c.EtcdUser, c.EtcdPassword = k.EtcdUser, k.EtcdPassword
	return c
}

// Env returns the endpoints as KEY=value lines that EndpointsFromEnv reads
// back, one per kind of server named (what `lockbench up` prints). Values are
// verbatim, not shell-quoted, and include the Redis and etcd passwords, the
// rediss:// entries and the DSNs with their passwords: pass anything that is
// logged through Redact.
func (e Endpoints) Env() []string {
	var lines []string
	if len(e.RedisAddrs) > 0 {
		lines = append(lines, EnvRedisAddrs+"="+strings.Join(e.RedisAddrs, ","))
	}
	if e.RedisPassword != "" {
		lines = append(lines, EnvRedisPassword+"="+e.RedisPassword)
	}
	if e.RedisCACert != "" {
		lines = append(lines, EnvRedisCACert+"="+e.RedisCACert)
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
	for _, kv := range [][2]string{
		{EnvEtcdCACert, e.EtcdCACert}, {EnvEtcdCert, e.EtcdCert}, {EnvEtcdKey, e.EtcdKey},
		{EnvEtcdUser, e.EtcdUser}, {EnvEtcdPassword, e.EtcdPassword},
	} {
		if kv[1] != "" {
			lines = append(lines, kv[0]+"="+kv[1])
		}
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
	if e.MySQLDSN != "" {
		lines = append(lines, EnvMySQLDSN+"="+e.MySQLDSN)
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
