package cli

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/lockbench/lockbench/results"
)

// packableDir writes a finished run directory (runNoServer's), its build
// marked modified when modified, and returns it.
func packableDir(t *testing.T, modified bool) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "run")
	runNoServer(t, dir)
	if modified {
		meta, _, err := results.ReadDirData(dir)
		if err != nil {
			t.Fatal(err)
		}
		meta.Build.Modified = true
		if err := results.WriteMeta(dir, meta); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// runCLI runs lockbench with args as cmd/lockbench does and returns its
// exit code and output.
func runCLI(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = ExitCode(Run(context.Background(), args, &out, &errb), &errb)
	return code, out.String(), errb.String()
}

// TestPackThenReadBack packs a run directory with `lockbench pack`, which
// redraws the reports from the archive: the same report.md as before
// packing but for the SVG links and the file list (the SVGs and the data
// are in the archive), no SVG left on disk, and `lockbench report` redraws
// the very same again. `lockbench compare` reads the packed directory
// beside an unpacked copy.
func TestPackThenReadBack(t *testing.T) {
	dir := packableDir(t, false)
	if code, _, stderr := runCLI("report", dir); code != 0 {
		t.Fatalf("report before pack: exit %d: %s", code, stderr)
	}
	before, err := os.ReadFile(filepath.Join(dir, results.ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	unpacked := filepath.Join(t.TempDir(), "unpacked")
	if err := os.CopyFS(unpacked, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}

	code, stdout, stderr := runCLI("pack", dir)
	if code != 0 || !strings.HasPrefix(stdout, "packed: "+filepath.Join(dir, results.ArchiveFile)) {
		t.Fatalf("pack: exit %d, stdout %q, stderr %q; want 0 and the archive named", code, stdout, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, results.HlogDir)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("hlog/ after pack: %v; want it packed away", err)
	}
	if svgs, _ := filepath.Glob(filepath.Join(dir, results.ChartsDir, "*.svg")); len(svgs) > 0 {
		t.Errorf("SVG charts on disk after pack: %v; want them in the archive only", svgs)
	}
	packed, err := os.ReadFile(filepath.Join(dir, results.ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(packed, []byte("[SVG](")) || !bytes.Contains(packed, []byte(results.ArchiveFile)) {
		t.Errorf("report.md of the packed directory links SVGs or does not name %s", results.ArchiveFile)
	}
	if got, want := beforeFiles(packed), beforeFiles(svgLinksOut(before)); got != want {
		t.Errorf("report.md redrawn from the packed directory differs from the one drawn before packing (SVG links and file list aside):\n%s\n---\n%s", got, want)
	}

	if code, _, stderr := runCLI("report", dir); code != 0 {
		t.Fatalf("report after pack: exit %d: %s", code, stderr)
	}
	again, err := os.ReadFile(filepath.Join(dir, results.ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again, packed) {
		t.Errorf("lockbench report on the packed directory drew another report.md than pack did")
	}
	if svgs, _ := filepath.Glob(filepath.Join(dir, results.ChartsDir, "*.svg")); len(svgs) > 0 {
		t.Errorf("SVG charts on disk after report of a packed directory: %v", svgs)
	}
	if code, stdout, stderr := runCLI("compare", unpacked, dir); code != 0 || stdout == "" {
		t.Errorf("compare unpacked packed: exit %d, stderr %q; want 0 and a comparison", code, stderr)
	}
}

// svgLinksOut is report.md without its " ([SVG](…))" links.
func svgLinksOut(md []byte) []byte {
	return regexp.MustCompile(` \(\[SVG\]\([^)]*\)\)`).ReplaceAll(md, nil)
}

// beforeFiles is report.md up to its list of files.
func beforeFiles(md []byte) string {
	s, _, _ := strings.Cut(string(md), "\n## Files\n")
	return s
}

func TestPackRefuses(t *testing.T) {
	tmp := t.TempDir()
	tests := []struct {
		name string
		args []string
		code int
		want string // what the one line on stderr must say
	}{
		// A published figure must come from committed code.
		{"modified build", []string{"pack", packableDir(t, true)}, 1, "uncommitted changes"},
		// Usage errors, refused while parsing.
		{"no directory", []string{"pack"}, 2, "pack: want exactly one run directory"},
		{"two directories", []string{"pack", tmp, tmp}, 2, "pack: want exactly one run directory"},
		{"missing directory", []string{"pack", filepath.Join(tmp, "nothing")}, 2, "is not a run directory"},
		{"unknown flag", []string{"pack", "--force", tmp}, 2, "-force"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := runCLI(tt.args...)
			lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
			if code != tt.code || len(lines) != 1 || !strings.Contains(lines[0], tt.want) {
				t.Errorf("lockbench %s: exit %d, stderr %q; want exit %d and one line saying %q", strings.Join(tt.args, " "), code, stderr, tt.code, tt.want)
			}
			if tt.code == 2 && !isUsage(check(tt.args[1:])) {
				t.Errorf("check(%q) is not a usage error; want bad input refused while parsing", tt.args[1:])
			}
		})
	}
}
