package redlock

import (
	"errors"
	"fmt"
)

// NodeError is one node's failure in a fan-out to all nodes.
type NodeError struct {
	Node int    // index in the node list
	Addr string // host:port
	Err  error
}

// Error names the node and its failure.
func (e *NodeError) Error() string { return fmt.Sprintf("node %d (%s): %v", e.Node, e.Addr, e.Err) }

// Unwrap returns the node's error.
func (e *NodeError) Unwrap() error { return e.Err }

// errTaken marks a node that answered "already set" (held, or not ours).
var errTaken = errors.New("redlock: key held on this node")

// countErrs returns how many of errs are not nil.
func countErrs(errs []error) int {
	n := 0
	for _, err := range errs {
		if err != nil {
			n++
		}
	}
	return n
}
