// Package pgutil holds what the Postgres strategies (pg-onconflict,
// pg-advisory, pg-unique) share: their pool defaults (DefaultMaxConns,
// DefaultWarmConns, DefaultStatementTimeout, DefaultConnectTimeout), how
// Config.PostgresDSN is checked and parsed without quoting it (PoolConfig,
// ConnConfig), warming a pool (Warm), and how an error from a statement
// becomes what a strategy reports (Classify).
package pgutil

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/lockbench/lockbench/strategies"
)

// Classify turns an error from a statement made by strategy name for op into
// what the strategy reports: ctx.Err() when the caller's ctx is done (the
// database is not to blame); strategies.ErrUnavailable for a Transient
// SQLSTATE, a transport failure or a per-statement deadline; a server
// certificate the client does not trust (sslmode=verify-ca or verify-full
// with a wrong sslrootcert, or one for another host) named as such, a
// misconfiguration wrapped as is; any other server error (a bug, a wrong
// password) wrapped as is. pgx's connection errors name the host, user and
// database, never the password.
func Classify(ctx context.Context, name, op string, err error) error {
	if ctx.Err() != nil {
		if errors.Is(err, ctx.Err()) {
			return fmt.Errorf("%s: %s: %w", name, op, err)
		}
		return fmt.Errorf("%s: %s: %w (%v)", name, op, ctx.Err(), err)
	}
	if untrusted(err) {
		return fmt.Errorf("%s: %s: server certificate not trusted (check sslrootcert and the host in the DSN): %w", name, op, err)
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && !Transient(pgErr.Code) {
		return fmt.Errorf("%s: %s: %w", name, op, err)
	}
	return fmt.Errorf("%w: %s: %s: %w", strategies.ErrUnavailable, name, op, err)
}

// Transient reports whether SQLSTATE code means the server cannot serve the
// statement now but might later: connection exceptions (08), insufficient
// resources such as too many connections (53), operator intervention such
// as a shutdown (57), system errors (58).
func Transient(code string) bool {
	if len(code) < 2 {
		return false
	}
	switch code[:2] {
	case "08", "53", "57", "58":
		return true
	}
	return false
}

// untrusted reports whether err is a failure to trust the server's
// certificate.
func untrusted(err error) bool {
	var (
		verify   *tls.CertificateVerificationError
		unknown  x509.UnknownAuthorityError
		hostname x509.HostnameError
		invalid  x509.CertificateInvalidError
	)
	return errors.As(err, &verify) || errors.As(err, &unknown) || errors.As(err, &hostname) ||
		errors.As(err, &invalid)
}
