package results

import (
	"image/color"

	"github.com/lockbench/lockbench/strategies"
)

// StrategyColor returns the colour of strategy name in every chart: the
// registry's (strategies.Color), so that order and colour live in one place.
func StrategyColor(name string) color.RGBA { return strategies.Color(name) }

// strategyRank orders strategies as the registry does (strategies.Rank).
func strategyRank(name string) int { return strategies.Rank(name) }

// FaultOrder is the order faults appear in in tables and the safety grid;
// faults not listed follow, sorted by name.
var FaultOrder = []string{"none", "pause", "slow", "kill-node", "restart-node", "partition", "clock-jump", "failover"}

func faultRank(name string) int {
	if name == "" {
		name = FaultNone
	}
	for i, f := range FaultOrder {
		if f == name {
			return i
		}
	}
	return len(FaultOrder)
}
