package results

import (
	"fmt"
	"io"

	"github.com/lockbench/lockbench/internal/atomicfile"
)

// WriteFileAtomic is atomicfile.Write with this package's error prefix: a
// reader (or an interrupted run) sees either the old file or the new one,
// never half of one.
func WriteFileAtomic(path string, write func(io.Writer) error) error {
	if err := atomicfile.Write(path, write); err != nil {
		return fmt.Errorf("results: %w", err)
	}
	return nil
}
