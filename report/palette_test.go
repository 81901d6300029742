package report

import (
	"testing"

	"github.com/lockbench/lockbench/strategies"
)

// Every built-in strategy has a colour of its own, and no two share one.
func TestPaletteCoversBuiltin(t *testing.T) {
	seen := map[string]string{}
	for _, name := range strategies.Builtin() {
		c, ok := palette[name]
		if !ok {
			t.Errorf("%s has no colour in palette", name)
			continue
		}
		key := string([]byte{c.R, c.G, c.B})
		if other, dup := seen[key]; dup {
			t.Errorf("%s and %s share a colour", name, other)
		}
		seen[key] = name
	}
	if len(palette) != len(strategies.Builtin()) {
		t.Errorf("palette has %d colours for %d built-in strategies", len(palette), len(strategies.Builtin()))
	}
}
