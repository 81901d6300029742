package servers

import (
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
)

// superuser is the role initdb creates and the DSN logs in as: pgUser, or
// Secure.User with Options.Secure.
func (p *Postgres) superuser() string {
	if p.secure == nil {
		return pgUser
	}
	return p.secure.user()
}

// The files of a secure server, beside its data directory.
func (p *Postgres) pwPath() string   { return filepath.Join(filepath.Dir(p.dataDir), "pwfile") }
func (p *Postgres) certPath() string { return filepath.Join(filepath.Dir(p.dataDir), "server.pem") }
func (p *Postgres) keyPath() string  { return filepath.Join(filepath.Dir(p.dataDir), "server-key.pem") }

// prepareSecure writes what Options.Secure needs beside the data directory: the superuser's
// password for initdb, and copies of the certificate and key that the
// server's user owns (postgres refuses a key others can read).
func (p *Postgres) prepareSecure() error {
	if p.secure == nil {
		return nil
	}
	write := func(path string, b []byte) error {
		if err := os.WriteFile(path, b, 0o600); err != nil {
			return err
		}
		if p.cred != nil {
			return os.Chown(path, int(p.cred.Uid), int(p.cred.Gid))
		}
		return nil
	}
	if p.secure.auth() {
		if err := write(p.pwPath(), []byte(p.secure.Password+"\n")); err != nil {
			return err
		}
	}
	if !p.secure.tls() {
		return nil
	}
	for _, f := range [][2]string{{p.secure.Certs.ServerCert, p.certPath()}, {p.secure.Certs.ServerKey, p.keyPath()}} {
		b, err := os.ReadFile(f[0])
		if err != nil {
			return err
		}
		if err := write(f[1], b); err != nil {
			return err
		}
	}
	return nil
}

// dsn is the server's connection string: the superuser on its address
// (Options.Host, or 127.0.0.1), with
// Options.Secure its password, sslmode=verify-full and the CA as
// sslrootcert; sslmode=disable otherwise.
func (p *Postgres) dsn() string {
	u := url.URL{Scheme: "postgres", Host: net.JoinHostPort(p.addr(), strconv.Itoa(p.port)), Path: "/postgres"}
	u.User = url.User(p.superuser())
	q := url.Values{"sslmode": {"disable"}}
	if p.secure.auth() {
		u.User = url.UserPassword(p.superuser(), p.secure.Password)
	}
	if p.secure.tls() {
		q = url.Values{"sslmode": {"verify-full"}, "sslrootcert": {p.secure.Certs.CA}}
	}
	u.RawQuery = q.Encode()
	return u.String()
}
