package mysqllock

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-sql-driver/mysql"

	"github.com/lockbench/lockbench/strategies"
)

// errClosed is returned by Acquire on a closed strategy.
var errClosed = errors.New("mysqllock: strategy closed")

// errNoDSN is returned by New without Config.MySQLDSN.
var errNoDSN = errors.New("mysqllock: no Config.MySQLDSN")

// errInvalidDSN is the error for a DSN the driver cannot parse: its cause
// may quote the whole string, password included, so it says nothing of it.
var errInvalidDSN = errors.New("mysqllock: Config.MySQLDSN is not a valid go-sql-driver/mysql DSN, user:password@tcp(host:port)/dbname (not shown: it may hold a password)")

// transient are the server's error numbers that mean "cannot serve now":
// too many connections (1040, 1203), shutting down (1053), the connection
// killed (1927) or dropped for inactivity (4031).
var transient = map[uint16]bool{1040: true, 1053: true, 1203: true, 1927: true, 4031: true}

// classify turns an error from a statement made for op into what the
// strategy reports: ctx.Err() when the caller's ctx is done (the server is not
// to blame); strategies.ErrUnavailable for a transient server error, a
// transport failure or a statement deadline; any other server error (a wrong
// password, a missing privilege) wrapped as is. The driver's errors name
// neither the DSN nor the password.
func classify(ctx context.Context, op string, err error) error {
	if ctx.Err() != nil {
		if errors.Is(err, ctx.Err()) {
			return fmt.Errorf("mysqllock: %s: %w", op, err)
		}
		return fmt.Errorf("mysqllock: %s: %w (%v)", op, ctx.Err(), err)
	}
	var me *mysql.MySQLError
	if errors.As(err, &me) && !transient[me.Number] {
		return fmt.Errorf("mysqllock: %s: %w", op, err)
	}
	return fmt.Errorf("%w: mysqllock: %s: %w", strategies.ErrUnavailable, op, err)
}

// fromServer reports whether err is an error the server sent: the
// session is still up. Any other error from a statement is the
// transport's, or a deadline's.
func fromServer(err error) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me)
}
