package cli

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/lockbench/lockbench/report"
	"github.com/lockbench/lockbench/strategies"
)

func init() { report.Styles = StrategyStyle }

// StrategyStyle is a strategy's place and colour in the report, from its
// registry entry (a strategy not registered here has neither).
func StrategyStyle(name string) report.Style {
	info, _ := strategies.Registered(name)
	return report.Style{Order: info.Order, Color: info.Color}
}

// runStrategies is `lockbench strategies`: each strategy with one line.
func runStrategies(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("strategies", stderr)
	if err := parseFlags(fs, args, stdout); err != nil {
		return err
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSERVER\tFENCING\tDESCRIPTION")
	for _, info := range strategies.All() {
		server := info.Need.String()
		if info.Need.Backend == strategies.BackendNone {
			server = "in-process"
		}
		fence := "-"
		if info.Fencing {
			fence = "yes"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", info.Name, server, fence, info.Description)
	}
	return tw.Flush()
}
