package report

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"path"
	"strings"

	"github.com/lockbench/lockbench/results"
)

// report.html is built from a Go template (assets/report.html.tmpl) with
// the chart data as JSON in the page, and uPlot, its stylesheet and the
// page's own script and style inlined, so that the one file opens from
// disk, offline, and can be mailed.

// UplotVersion is the version of uPlot vendored in assets/uplot (from the
// npm registry's uplot package, MIT licence: assets/uplot/LICENSE).
const UplotVersion = "1.6.32"

var (
	//go:embed assets/uplot/uPlot.iife.min.js
	uplotJS string
	//go:embed assets/uplot/uPlot.min.css
	uplotCSS string
	//go:embed assets/report.js
	reportJS string
	//go:embed assets/report.css
	reportCSS string
	//go:embed assets/report.html.tmpl
	reportHTMLTemplate string
)

var reportHTML = template.Must(template.New("report.html").Parse(reportHTMLTemplate))

// htmlPage is what the template renders.
type htmlPage struct {
	Title       string
	Header      []htmlField
	Empty       bool
	Interrupted bool
	// Glance is the verdicts at a glance, the safety grid with a reading
	// per strategy, which opens the page when faults ran.
	Glance    *htmlChart
	Scenarios []htmlBlock
	Verdicts  []htmlBlock
	Results   []htmlBlock
	// Reading is report.md's "How to read the figures".
	Reading []htmlBlock
	Charts  []htmlChart
	Missing []string
	Files   []htmlFile
	// Data is the charts' data, embedded as JSON for the script.
	Data         htmlData
	UplotVersion string
	UplotCSS     template.CSS
	ReportCSS    template.CSS
	UplotJS      template.JS
	ReportJS     template.JS
}

// htmlField is one line of the header: a name and its value, or a note
// (Meta.Notes, with report.md's inline markup).
type htmlField struct {
	Name, Value string
	Code        bool
	Note        template.HTML
}

// htmlFile is one entry of the Files section.
type htmlFile struct {
	Name, Href, What string
}

// htmlData is the JSON the page's script reads.
type htmlData struct {
	Charts []htmlChart `json:"charts"`
}

// WriteHTML writes report.html: what report.md holds (the header, the
// verdicts at a glance when faults ran, the scenario table, the verdict table when faults ran, the results, how to
// read them and the charts of cs, the tables and notes written by
// report.md's own writers), as one self-contained page, with sortable tables
// and every chart of cs as an interactive plot (hover for values and, over
// trials, their interval; click a legend entry to hide its series; drag to
// zoom). runs are the runs cs was built from; the links to the PNG and SVG
// files and to the data files follow the layout l. The same input gives
// the same bytes.
func WriteHTML(w io.Writer, runs []results.Run, meta results.Meta, cs ChartSet, l results.Layout) error {
	ss := results.SummariesOf(runs)
	page := htmlPage{
		Title: meta.Title, Header: htmlHeader(meta), Empty: len(ss) == 0,
		UplotVersion: UplotVersion,
		UplotCSS:     template.CSS(uplotCSS), ReportCSS: template.CSS(reportCSS),
		UplotJS: template.JS(uplotJS), ReportJS: template.JS(reportJS),
	}
	if page.Title == "" {
		page.Title = "lockbench report"
	}
	if !page.Empty {
		var err error
		if page.Scenarios, err = htmlScenarioBlocks(ss); err != nil {
			return err
		}
		if v := results.VerdictRuns(ss); len(v) > 0 {
			if page.Verdicts, err = htmlVerdictBlocks(v); err != nil {
				return err
			}
		}
		if page.Results, err = htmlResultBlocks(ss); err != nil {
			return err
		}
		page.Reading = htmlBlocks(statisticsNote(ss))
		for i := range ss {
			page.Interrupted = page.Interrupted || ss[i].Interrupted
		}
		page.Charts = htmlCharts(runs, cs, l)
		page.Glance = htmlGlance(ss, cs, l)
		if meta.Archive != nil { // a packed directory's SVGs are in its archive
			for i := range page.Charts {
				page.Charts[i].SVG = ""
			}
			if page.Glance != nil {
				page.Glance.SVG = ""
			}
		}
		page.Missing = cs.Missing
		page.Files = htmlFiles(ss, meta, cs, l)
		for _, ch := range page.Charts {
			if !ch.Static && ch.Kind == htmlKindLines {
				page.Data.Charts = append(page.Data.Charts, ch)
			}
		}
	}
	var b strings.Builder
	if err := reportHTML.Execute(&b, page); err != nil {
		return fmt.Errorf("results: rendering report.html: %w", err)
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("results: writing report.html: %w", err)
	}
	return nil
}

// htmlGlance is the verdicts at a glance of ss, the safety grid drawn as
// a table with a reading per strategy, linking the grid's PNG and SVG
// when cs drew them; nil when no fault ran.
func htmlGlance(ss []results.Summary, cs ChartSet, l results.Layout) *htmlChart {
	g := htmlSafetyGrid(results.VerdictRuns(ss))
	if g == nil {
		return nil
	}
	g.Name, g.Title, g.Caption = safetyGridName, "Verdicts at a glance", glanceNote("")
	for _, ch := range cs.Charts {
		if ch.Name == safetyGridName {
			file := path.Join(l.Charts, ch.Name) // a link: slashes on every OS
			g.PNG, g.SVG = file+".png", file+".svg"
		}
	}
	return g
}

func htmlHeader(meta results.Meta) []htmlField {
	var out []htmlField
	if !meta.Date.IsZero() {
		out = append(out, htmlField{Name: "Date", Value: meta.Date.Format("2006-01-02 15:04:05 MST")})
	}
	if meta.Command != "" {
		out = append(out, htmlField{Name: "Command", Value: meta.Command, Code: true})
	}
	if h := hostLine(meta.Host); h != "" {
		out = append(out, htmlField{Name: "Host", Value: h})
	}
	for _, n := range meta.Notes {
		out = append(out, htmlField{Note: inlineHTML(n)})
	}
	return out
}

// htmlFiles lists the directory's files, as report.md's Files section. In
// a packed directory the data files are in the archive: listed, not
// linked (Href "").
func htmlFiles(ss []results.Summary, meta results.Meta, cs ChartSet, l results.Layout) []htmlFile {
	files := []htmlFile{
		{results.SummaryJSONFile, results.SummaryJSONFile, "every run's counters and latencies (times in ns)"},
		{results.SummaryCSVFile, results.SummaryCSVFile, "the same, one row per run"},
	}
	if len(results.VerdictRuns(ss)) > 0 {
		files = append(files, htmlFile{results.VerdictsFile, results.VerdictsFile, "the runs behind the verdict table"})
	}
	if l.Hlog != "" {
		files = append(files, htmlFile{l.Hlog + "/", l.Hlog + "/", "HdrHistogram interval logs per run and phase, for HistogramLogAnalyzer"})
	}
	if l.Charts != "" && len(cs.Charts) > 0 {
		files = append(files, htmlFile{l.Charts + "/", l.Charts + "/", "every chart as PNG and SVG"})
	}
	files = append(files,
		htmlFile{results.BenchFile, results.BenchFile, "Go benchmark format, for benchstat old/bench.txt new/bench.txt"},
		htmlFile{results.ReportFile, results.ReportFile, "this report in Markdown"},
		htmlFile{results.MetaFile, results.MetaFile, "how and where this was run; lockbench report DIR redraws the charts and both reports"},
	)
	if a := meta.Archive; a != nil {
		for i := range files {
			switch files[i].Name {
			case l.Charts + "/":
				files[i].What = "every chart as PNG (the SVGs are in the archive)"
			case results.ReportFile, results.MetaFile:
			default:
				files[i].Href, files[i].What = "", files[i].What+" (in the archive)"
			}
		}
		files = append([]htmlFile{{a.File, a.File, fmt.Sprintf("the packed data: %d files, sha256 %s; tar --zstd -xf %s unpacks it, and lockbench reads it as it is", a.Files, a.SHA256, a.File)}}, files...)
	}
	return files
}
