package check

import (
	"fmt"

	"github.com/anishathalye/porcupine"
)

// free is the lock model's state when no worker holds the key; any other
// state is the holder's client number.
const free = -1

// lockInput is one operation on the lock model: client acquires, or
// releases.
type lockInput struct {
	client  int
	release bool
}

// lockModel is the sequential specification of one lock key
// (docs/history.md, "Mutual exclusion"): its state is the holder or
// free; an acquire needs free and makes its client the holder, a release
// needs its client to be the holder and frees the key. The state starts
// at init (a chunk after the first starts where the one before left the
// key); names[c] names client c in the visualisation.
func lockModel(init int, names []string) porcupine.Model {
	return porcupine.Model{
		Init: func() any { return init },
		Step: func(state, input, _ any) (bool, any) {
			in := input.(lockInput)
			s := state.(int)
			if in.release {
				return s == in.client, free
			}
			return s == free, in.client
		},
		DescribeOperation: func(input, _ any) string {
			in := input.(lockInput)
			if in.release {
				return "release " + names[in.client]
			}
			return "acquire " + names[in.client]
		},
		DescribeState: func(state any) string {
			if s := state.(int); s != free {
				return "held by " + names[s]
			}
			return "free"
		},
	}
}

// clientName names a worker: instance and worker.
func clientName(i, w int32) string {
	return fmt.Sprintf("i%d w%d", i, w)
}
