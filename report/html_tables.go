package report

import (
	"html"
	"html/template"
	"regexp"
	"strconv"
	"strings"

	"github.com/lockbench/lockbench/results"
)

// The tables and notes of report.html are report.md's own: the functions
// that write report.md's Markdown write them, and htmlBlocks reads that
// Markdown back (the subset mdTable and report.go write: tables and
// paragraphs with `code` and **bold**), so that the two reports never
// disagree about a figure.

// htmlBlock is a table or a paragraph.
type htmlBlock struct {
	Table *htmlTable
	Para  template.HTML
}

// htmlTable is a table of report.html. The page sorts it by any column
// when its header is clicked: by a cell's text read as a number with its
// unit ("4.56ms", "99.5%", "3/6 …"), text after numbers.
type htmlTable struct {
	Columns []htmlColumn
	Rows    []htmlRow
}

type htmlColumn struct {
	Name  string
	Right bool
}

// htmlRow is a row; Class "unsafe" marks a run (or cell) that lost safety.
type htmlRow struct {
	Class string
	Cells []htmlCell
}

// htmlCell is a cell; its Class is "num" in a right-aligned (numeric)
// column, and has "bad" for a count that made a run unsafe and for the
// UNSAFE verdict.
type htmlCell struct {
	Text, Class string
}

// unsafeColumns are the columns whose non-zero counts make a run unsafe
// (Summary.UnsafeCount), and a cell's unsafe trials (the verdict table's
// "unsafe trials", the results table's "unsafe": k/N).
var unsafeColumns = map[string]bool{
	"duplicates": true, "lost": true, "overdrafts": true, "lost updates": true,
	"stale accepted": true, "unsafe trials": true, "unsafe": true,
}

// leadingCount matches a cell that starts with a count: "12", "3/6 (…)".
var leadingCount = regexp.MustCompile(`^(\d+)\b`)

// htmlBlocks reads Markdown written by report.go's table and note writers.
func htmlBlocks(md string) []htmlBlock {
	var out []htmlBlock
	var table, para []string
	flush := func() {
		if len(table) > 0 {
			out = append(out, htmlBlock{Table: parseMarkdownTable(table)})
			table = nil
		}
		if len(para) > 0 {
			out = append(out, htmlBlock{Para: inlineHTML(strings.Join(para, " "))})
			para = nil
		}
	}
	for _, line := range strings.Split(md, "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "":
			flush()
		case strings.HasPrefix(line, "|"):
			if len(para) > 0 {
				flush()
			}
			table = append(table, line)
		default:
			if len(table) > 0 {
				flush()
			}
			para = append(para, line)
		}
	}
	flush()
	return out
}

// parseMarkdownTable reads the lines of a table mdTable wrote: a header
// row, the alignment row (":" on the right for right-aligned columns),
// then rows. A row with an UNSAFE verdict is marked unsafe, and so are its
// non-zero counts in unsafeColumns.
func parseMarkdownTable(lines []string) *htmlTable {
	t := &htmlTable{}
	for i, line := range lines {
		cells := splitMarkdownRow(line)
		switch i {
		case 0:
			for _, c := range cells {
				t.Columns = append(t.Columns, htmlColumn{Name: c})
			}
		case 1:
			for j, c := range cells {
				if j < len(t.Columns) {
					t.Columns[j].Right = strings.HasSuffix(c, ":")
				}
			}
		default:
			row := htmlRow{}
			for j, c := range cells {
				cell := htmlCell{Text: c}
				if strings.HasPrefix(c, "**") && strings.HasSuffix(c, "**") && len(c) > 4 {
					cell.Text = c[2 : len(c)-2]
				} else if strings.HasPrefix(c, "*") && strings.HasSuffix(c, "*") && len(c) > 2 {
					cell.Text = c[1 : len(c)-1]
				}
				switch cell.Text {
				case "UNSAFE":
					row.Class, cell.Class = "unsafe", "bad"
				case "UNKNOWN":
					row.Class, cell.Class = "unknown", "unknown"
				}
				if j < len(t.Columns) && unsafeColumns[t.Columns[j].Name] {
					if m := leadingCount.FindStringSubmatch(cell.Text); m != nil {
						if n, _ := strconv.Atoi(m[1]); n > 0 {
							cell.Class = "bad"
						}
					}
				}
				if j < len(t.Columns) && t.Columns[j].Right {
					cell.Class = strings.TrimSpace("num " + cell.Class)
				}
				row.Cells = append(row.Cells, cell)
			}
			t.Rows = append(t.Rows, row)
		}
	}
	return t
}

// splitMarkdownRow splits "| a | b\|c |" into "a", "b|c".
func splitMarkdownRow(line string) []string {
	line = strings.TrimSpace(line)
	line = strings.TrimPrefix(line, "|")
	line = strings.TrimSuffix(line, "|")
	var cells []string
	var cur strings.Builder
	for i := 0; i < len(line); i++ {
		switch {
		case line[i] == '\\' && i+1 < len(line) && line[i+1] == '|':
			cur.WriteByte('|')
			i++
		case line[i] == '|':
			cells = append(cells, strings.TrimSpace(cur.String()))
			cur.Reset()
		default:
			cur.WriteByte(line[i])
		}
	}
	return append(cells, strings.TrimSpace(cur.String()))
}

var (
	inlineCode = regexp.MustCompile("`([^`]+)`")
	inlineBold = regexp.MustCompile(`\*\*([^*]+)\*\*`)
)

// inlineHTML is a paragraph of report.md as HTML: escaped, with its
// `code` and **bold** spans marked up. Escaping first leaves backticks and
// asterisks alone, so the markup added after is the only markup.
func inlineHTML(s string) template.HTML {
	s = html.EscapeString(s)
	s = inlineCode.ReplaceAllString(s, "<code>$1</code>")
	s = inlineBold.ReplaceAllString(s, "<b>$1</b>")
	return template.HTML(s)
}

// htmlScenarioBlocks is report.md's scenario table.
func htmlScenarioBlocks(ss []results.Summary) ([]htmlBlock, error) {
	var b strings.Builder
	if err := scenarioTable(&b, ss); err != nil {
		return nil, err
	}
	return htmlBlocks(b.String()), nil
}

// htmlVerdictBlocks is report.md's verdict table (VerdictTable: one row
// per run, or per cell with its unsafe trials when trials ran) and its
// note.
func htmlVerdictBlocks(v []results.Summary) ([]htmlBlock, error) {
	var b strings.Builder
	if err := VerdictTable(&b, v); err != nil {
		return nil, err
	}
	return htmlBlocks(b.String()), nil
}

// htmlResultBlocks is report.md's results section: the results table of
// the runs resultRows picks (over trials when they ran), the acquire
// latency by outcome, and the notes.
func htmlResultBlocks(ss []results.Summary) ([]htmlBlock, error) {
	rows := resultRows(ss)
	var b strings.Builder
	var err error
	if results.MaxTrials(rows) > 1 {
		err = trialsMarkdown(&b, rows)
	} else {
		err = resultsMarkdown(&b, rows)
	}
	if err == nil {
		err = outcomeMarkdown(&b, rows)
	}
	if err != nil {
		return nil, err
	}
	if len(rows) < len(ss) {
		b.WriteString("\nThe other " + strconv.Itoa(len(ss)-len(rows)) + " runs (sweep points, fault runs) are in `summary.csv` and the charts below.\n")
	}
	return htmlBlocks(b.String()), nil
}
