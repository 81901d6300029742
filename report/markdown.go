package report

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// mdTable writes a Markdown table padded so it also reads well as plain
// text in a terminal. right marks the columns aligned right (numbers).
func mdTable(w io.Writer, header []string, right []bool, rows [][]string) error {
	header = escapeAll(header)
	esc := make([][]string, len(rows))
	for i, r := range rows {
		esc[i] = escapeAll(r)
	}
	rows = esc
	width := make([]int, len(header))
	for i, h := range header {
		width[i] = max(3, utf8.RuneCountInString(h))
	}
	for _, r := range rows {
		for i, c := range r {
			width[i] = max(width[i], utf8.RuneCountInString(c))
		}
	}
	pad := func(s string, i int) string {
		n := width[i] - utf8.RuneCountInString(s)
		if right[i] {
			return strings.Repeat(" ", n) + s
		}
		return s + strings.Repeat(" ", n)
	}
	var b strings.Builder
	line := func(cells []string) {
		b.WriteString("|")
		for i, c := range cells {
			b.WriteString(" " + pad(c, i) + " |")
		}
		b.WriteString("\n")
	}
	line(header)
	b.WriteString("|")
	for i := range header {
		if right[i] {
			b.WriteString(" " + strings.Repeat("-", width[i]-1) + ": |")
		} else {
			b.WriteString(" " + strings.Repeat("-", width[i]) + " |")
		}
	}
	b.WriteString("\n")
	for _, r := range rows {
		line(r)
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("results: writing table: %w", err)
	}
	return nil
}

// escapeAll keeps cells from breaking the table.
func escapeAll(cells []string) []string {
	out := make([]string, len(cells))
	for i, c := range cells {
		out[i] = strings.ReplaceAll(c, "|", `\|`)
	}
	return out
}
