package cli

import (
	"context"
	"errors"
	"io"
)

// runReport is `lockbench report`. Not built yet.
func runReport(context.Context, []string, io.Writer, io.Writer) error {
	return errors.New("report: not built yet")
}
