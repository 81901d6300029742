package cli

import (
	"context"
	"errors"
	"io"
)

// Commands still being built.
func runVerdicts(context.Context, []string, io.Writer, io.Writer) error {
	return errors.New("verdicts: not built yet")
}
func runMatrix(context.Context, []string, io.Writer, io.Writer) error {
	return errors.New("matrix: not built yet")
}
func runReport(context.Context, []string, io.Writer, io.Writer) error {
	return errors.New("report: not built yet")
}
func runPlan(context.Context, []string, io.Writer, io.Writer) error {
	return errors.New("plan: not built yet")
}
