// Package usage is the error type for bad input: one line naming the flag
// (or scenario key) and what it accepts. The command prints it on one line
// and exits 2. It lives apart from the command so that the packages that
// validate input (the scenario, the faults) can return it without
// importing the command, and the command can recognise it with errors.As.
// MemAvailable is the machine's side of one such check: a scenario too
// large for the memory available is bad input too.
package usage

import (
	"fmt"
	"strings"
)

// Error is a bad input: it names the flag and what is accepted.
type Error struct {
	// Flag is the flag's name without dashes ("ttl").
	Flag string
	// Msg says what is accepted and what was given.
	Msg string
}

// Error formats the error as "--flag: msg", on one line: every run of
// white space, newlines included, becomes one space.
func (e *Error) Error() string {
	return strings.Join(strings.Fields(fmt.Sprintf("--%s: %s", e.Flag, e.Msg)), " ")
}

// Errorf returns a *Error for flag with a formatted message.
func Errorf(flag, format string, args ...any) error {
	return &Error{Flag: flag, Msg: fmt.Sprintf(format, args...)}
}
