package servers

import (
	"errors"
	"fmt"
)

var (
	// ErrStopped is returned by the fault methods once Cluster.Stop has run.
	ErrStopped = errors.New("servers: cluster stopped")
	// ErrNoFaketime is returned by (*Redis).SetClockOffset for a node that was
	// not started with Options.Faketime.
	ErrNoFaketime = errors.New("servers: redis node not started under faketime (set Options.Faketime)")
	// ErrNotInstalled is wrapped by the error returned when a server binary is
	// missing and cannot be installed.
	ErrNotInstalled = errors.New("servers: not installed")
	// ErrTooFewNodes is wrapped by the error Ensure and TargetFor return when
	// the given Redis addresses are fewer than the run needs.
	ErrTooFewNodes = errors.New("servers: too few nodes")
	// ErrNotLocal is wrapped by Target.Node when the servers are the user's:
	// a fault that kills, restarts or moves the clock of a node needs
	// servers lockbench started itself.
	ErrNotLocal = errors.New("servers: this needs servers lockbench starts itself")
)

// StartError reports that one server failed to start (or to become ready in
// time). It carries the last lines of the server's log.
type StartError struct {
	// Server names the server, e.g. "redis-2 (127.0.0.1:40123)".
	Server string
	// Err is what went wrong.
	Err error
	// LogTail holds the last lines of the server's log, if any.
	LogTail string
}

// Error implements error.
func (e *StartError) Error() string {
	msg := fmt.Sprintf("servers: start %s: %v", e.Server, e.Err)
	if e.LogTail != "" {
		msg += "\n--- last lines of its log ---\n" + e.LogTail
	}
	return msg
}

// Unwrap returns e.Err.
func (e *StartError) Unwrap() error { return e.Err }
