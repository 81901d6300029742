package cli

import (
	"context"
	"errors"
	"io"
)

// runVerdicts is `lockbench verdicts`. Not built yet.
func runVerdicts(context.Context, []string, io.Writer, io.Writer) error {
	return errors.New("verdicts: not built yet")
}
