package cli

import (
	"context"
	"errors"
	"io"
)

// runPlan is `lockbench plan`. Not built yet.
func runPlan(context.Context, []string, io.Writer, io.Writer) error {
	return errors.New("plan: not built yet")
}
