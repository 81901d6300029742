package servers

import "regexp"

// redacted replaces a hidden password.
const redacted = "xxxxx"

var (
	// userinfoRe matches the password in scheme://user:password@host
	// (postgres://, redis://, rediss://, https://, …) up to the last '@'
	// before the host, as URL parsers read a password with a raw '@'.
	// (A URL's password has '/', '?' and '#' percent-encoded, so
	// http://h:80/a@b is a port and a path, not a password.)
	userinfoRe = regexp.MustCompile(`([a-zA-Z][a-zA-Z0-9+.-]*://[^:/@\s]*:)[^\s/?#]+@`)
	// tokenRe matches a NATS URL's token, nats://TOKEN@host: a userinfo
	// with no colon, which for NATS is the secret itself (for redis:// or
	// postgres:// it is a user name, and stays).
	tokenRe = regexp.MustCompile(`((?:nats|tls|ws|wss)://)[^:/@\s]+@`)
	// mysqlRe matches the password in a go-sql-driver/mysql DSN,
	// user:password@tcp(host:port)/db: up to the last '@' before the
	// protocol, as the driver reads a password with a raw '@'.
	mysqlRe = regexp.MustCompile(`([A-Za-z0-9_.$-]*:)[^\s]*@((?:tcp[46]?|unix)\()`)
	// queryRe matches ?password=… or &password=… in a URL's query.
	queryRe = regexp.MustCompile(`(?i)([?&][a-z_]*password=)[^&#\s]+`)
	// flagRe matches a command-line flag's value: --redis-password pw,
	// -password=pw.
	flagRe = regexp.MustCompile(`(?i)((?:^|\s)--?[a-z0-9_-]*password(?:[ \t]+|=))[^\s]+`)
	// keywordRe matches password=… in a key=value DSN (libpq allows blanks
	// around '=' and single-quoted values with backslash escapes), and
	// VAR_PASSWORD=… lines such as Env's. An empty value followed by a blank
	// may hide the next word too: hiding too much is the safe side.
	keywordRe = regexp.MustCompile(`(?i)((?:^|[\s,;])[a-z_]*password[ \t]*=[ \t]*)('(?:[^'\\]|\\.)*'?|[^\s']+)`)
	// fieldRe matches a password field printed by %+v (EtcdPassword:pw)
	// or in JSON or YAML ("password": "pw", etcd_password: pw).
	fieldRe = regexp.MustCompile(`(?i)((?:^|[\s{,;(])"?[a-z_]*password"?[ \t]*:[ \t]*)("(?:[^"\\]|\\.)*"?|[^\s,;})"]+)`)
)

// Redact returns s with passwords hidden: in URLs
// (postgres://u:pw@h/db, redis://:pw@h:6379, rediss://user:pw@h:6380,
// ?password=pw, nats://token@h:4222), in MySQL DSNs
// (user:pw@tcp(h:3306)/db) and in key=value connection strings (password=pw,
// password='p w'), in NAME_PASSWORD=pw lines (LOCKBENCH_REDIS_PASSWORD,
// LOCKBENCH_ETCD_PASSWORD), in --x-password flags and in printed fields
// (EtcdPassword:pw, "password": "pw"). Use it on anything that names a
// server and is logged.
func Redact(s string) string {
	s = userinfoRe.ReplaceAllString(s, "${1}"+redacted+"@")
	s = tokenRe.ReplaceAllString(s, "${1}"+redacted+"@")
	s = mysqlRe.ReplaceAllString(s, "${1}"+redacted+"@${2}")
	s = queryRe.ReplaceAllString(s, "${1}"+redacted)
	s = flagRe.ReplaceAllString(s, "${1}"+redacted)
	s = keywordRe.ReplaceAllString(s, "${1}"+redacted)
	return fieldRe.ReplaceAllString(s, "${1}"+redacted)
}
