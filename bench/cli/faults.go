package cli

import (
	"strings"

	"github.com/lockbench/lockbench/faults"
)

func faultHelp() string {
	return strings.Join(faults.Names(), ", ") + " (NAME or NAME:key=value,…)"
}
