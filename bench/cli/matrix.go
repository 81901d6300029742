package cli

import (
	"context"
	"errors"
	"io"
)

// runMatrix is `lockbench matrix`. Not built yet.
func runMatrix(context.Context, []string, io.Writer, io.Writer) error {
	return errors.New("matrix: not built yet")
}
