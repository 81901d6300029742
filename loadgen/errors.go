package loadgen

import (
	"context"
	"errors"
	"net"
	"strings"
	"syscall"

	"github.com/lockbench/lockbench/strategies"
)

// Error classes counted in summary.json's "errors" object.
const (
	ErrClassTimeout     = "timeout"     // a deadline passed talking to a server
	ErrClassRefused     = "refused"     // connection refused: the server is down
	ErrClassUnavailable = "unavailable" // other connection failures
	ErrClassLostLock    = "lost_lock"   // release found the lock no longer ours
	ErrClassStore       = "store"       // the store failed
	ErrClassOther       = "other"
	// ErrClassAgentLost: the instance's agent was lost mid-run, and the
	// delivery with it (package loadgen/agent).
	ErrClassAgentLost = "agent_lost"
	// ErrClassAdapterLost: the instance's adapter process exited, hung or
	// broke the protocol (strategies.ErrAdapterLost); it is not restarted,
	// and the instance's later deliveries fail the same way.
	ErrClassAdapterLost = "adapter_lost"
)

// errClasses lists the classes in the order counters hold them.
var errClasses = [...]string{ErrClassTimeout, ErrClassRefused, ErrClassUnavailable, ErrClassLostLock, ErrClassStore, ErrClassOther, ErrClassAgentLost, ErrClassAdapterLost}

const (
	ecTimeout = iota
	ecRefused
	ecUnavailable
	ecLostLock
	ecStore
	ecOther
	ecAgentLost
	ecAdapterLost
	numErrClasses
)

// classify maps a strategy error to its class.
func classify(err error) int {
	var ne net.Error
	switch {
	// First: a lost adapter's error may wrap a timeout too.
	case errors.Is(err, strategies.ErrAdapterLost):
		return ecAdapterLost
	case errors.Is(err, strategies.ErrNotOwner):
		return ecLostLock
	case errors.Is(err, syscall.ECONNREFUSED), strings.Contains(err.Error(), "connection refused"):
		return ecRefused
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return ecTimeout
	case errors.Is(err, strategies.ErrUnavailable):
		return ecUnavailable
	}
	return ecOther
}
