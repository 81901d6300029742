package redsync

import (
	"errors"

	rs "github.com/go-redsync/redsync/v4"

	"github.com/lockbench/lockbench/strategies/redisutil"
)

// votes counts what the nodes answered in one redsync call, from the errors
// it joined (the nodes that succeeded leave none).
type votes struct {
	taken   int // held under another value (*redsync.ErrNodeTaken)
	expired int // no key at all on release (redsync.ErrLockAlreadyExpired)
	slow    int // *redsync.RedisError that is a timeout
	down    int // any other *redsync.RedisError: refused, reset, an error reply
}

// tally walks err, a tree of errors.Join values as redsync builds them (it
// joins one node's error at a time onto the previous join), and counts its
// leaves.
func tally(err error) votes {
	var v votes
	var walk func(error)
	walk = func(err error) {
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			for _, e := range j.Unwrap() {
				walk(e)
			}
			return
		}
		var (
			re *rs.RedisError
			nt *rs.ErrNodeTaken
		)
		switch {
		case err == nil:
		case errors.As(err, &nt):
			v.taken++
		case errors.Is(err, rs.ErrLockAlreadyExpired):
			v.expired++
		case errors.As(err, &re) && redisutil.IsTimeout(re.Err):
			v.slow++
		case errors.As(err, &re):
			v.down++
		}
	}
	walk(err)
	return v
}
