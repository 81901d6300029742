package results_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/lockbench/lockbench/results"
	"github.com/lockbench/lockbench/results/resultstest"
)

// packFixture writes a run directory of the base fixtures, once with
// intervals and once without (a log holding one whole-run histogram, under
// the same ids with ".2"), with what a finished directory also holds:
// reports, a PNG and an SVG chart, and a folder a later version might add.
// Its build is clean unless modified.
func packFixture(t *testing.T, modified bool) string {
	t.Helper()
	dir := t.TempDir()
	runs := resultstest.MakeRuns(append(resultstest.BaseFixtures(3), resultstest.BaseFixtures(0)...))
	meta := resultstest.TestMeta()
	meta.Build = results.Build{Version: "(devel)", Commit: "0123456789abcdef0123456789abcdef01234567", Modified: modified}
	if err := results.WriteData(dir, runs, meta); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string]string{
		results.ReportFile:        "# report\n",
		results.ReportHTMLFile:    "<html></html>\n",
		"charts/safety-grid.png":  "png",
		"charts/safety-grid.svg":  "<svg/>",
		"histories/redlock.jsonl": "{}\n",
	} {
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// files lists the regular files under dir, slash-separated and sorted.
func files(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := fs.WalkDir(os.DirFS(dir), ".", func(name string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			out = append(out, name)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// copyDir copies the run directory src to a new temporary directory.
func copyDir(t *testing.T, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "copy")
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	return dst
}

func TestPackRoundTrip(t *testing.T) {
	dir := packFixture(t, false)
	before := files(t, dir)
	wantRuns, wantMeta, err := results.LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	twin := copyDir(t, dir)
	if err := results.Pack(dir); err != nil {
		t.Fatal(err)
	}

	// What stays visible, and nothing else but the archive.
	want := []string{"charts/safety-grid.png", results.ArchiveFile, results.MetaFile, results.ReportHTMLFile, results.ReportFile}
	if got := files(t, dir); !slices.Equal(got, want) {
		t.Errorf("after Pack the directory holds %q; want %q", got, want)
	}
	for _, gone := range []string{results.HlogDir, "histories"} {
		if _, err := os.Stat(filepath.Join(dir, gone)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s/ after Pack: %v; want it removed", gone, err)
		}
	}

	// meta.json records the archive as it is.
	archive, err := os.ReadFile(filepath.Join(dir, results.ArchiveFile))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(archive)
	meta, _, err := results.ReadDirData(dir)
	if err != nil {
		t.Fatal(err)
	}
	wantInfo := results.ArchiveInfo{File: results.ArchiveFile, SHA256: hex.EncodeToString(sum[:]), Bytes: int64(len(archive)), Files: len(before) - len(want) + 1}
	if meta.Archive == nil || *meta.Archive != wantInfo {
		t.Errorf("meta.json archive = %+v; want %+v", meta.Archive, wantInfo)
	}

	// Every reader sees the directory as it was.
	gotRuns, gotMeta, err := results.LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	gotMeta.Archive = nil
	if !reflect.DeepEqual(gotMeta, wantMeta) {
		t.Errorf("LoadDir meta after Pack = %+v; want %+v", gotMeta, wantMeta)
	}
	if !reflect.DeepEqual(gotRuns, wantRuns) {
		t.Errorf("LoadDir after Pack differs from LoadDir before (%d runs; want %d)", len(gotRuns), len(wantRuns))
	}
	if got := results.LayoutOf(dir); got != results.StandardLayout {
		t.Errorf("LayoutOf packed directory = %+v; want %+v", got, results.StandardLayout)
	}
	fsys, err := results.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := fstest.TestFS(fsys, before...); err != nil {
		t.Errorf("OpenDir of the packed directory: %v", err)
	}
	for _, name := range before {
		if name == results.MetaFile {
			continue // now records the archive
		}
		got, err := fs.ReadFile(fsys, name)
		if err != nil {
			t.Fatal(err)
		}
		if want, err := os.ReadFile(filepath.Join(twin, name)); err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s through OpenDir differs from the file packed (%v)", name, err)
		}
	}

	// Packing the same directory again, or the packed one, gives the same
	// bytes.
	if err := results.Pack(twin); err != nil {
		t.Fatal(err)
	}
	if again, err := os.ReadFile(filepath.Join(twin, results.ArchiveFile)); err != nil || !bytes.Equal(again, archive) {
		t.Errorf("packing a copy of the directory gave other bytes (%v); want the same", err)
	}
	if err := results.Pack(dir); err != nil {
		t.Fatal(err)
	}
	if again, err := os.ReadFile(filepath.Join(dir, results.ArchiveFile)); err != nil || !bytes.Equal(again, archive) {
		t.Errorf("packing the packed directory again gave other bytes (%v); want the same", err)
	}
}

func TestOpenDirRefusesArchiveMismatch(t *testing.T) {
	dir := packFixture(t, false)
	if err := results.Pack(dir); err != nil {
		t.Fatal(err)
	}
	archive := filepath.Join(dir, results.ArchiveFile)
	data, err := os.ReadFile(archive)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 1
	if err := os.WriteFile(archive, data, 0o644); err != nil {
		t.Fatal(err)
	}
	for name, read := range map[string]func() error{
		"OpenDir":     func() error { _, err := results.OpenDir(dir); return err },
		"ReadDirData": func() error { _, _, err := results.ReadDirData(dir); return err },
		"LoadDir":     func() error { _, _, err := results.LoadDir(dir); return err },
	} {
		err := read()
		if !errors.Is(err, results.ErrArchiveSum) || !strings.Contains(errMsg(err), archive) {
			t.Errorf("%s of a directory whose archive changed: %v; want ErrArchiveSum naming %s", name, err, archive)
		}
	}

	// An archive meta.json records but that is gone is an error too.
	if err := os.Remove(archive); err != nil {
		t.Fatal(err)
	}
	if _, err := results.OpenDir(dir); err == nil || !strings.Contains(err.Error(), archive) {
		t.Errorf("OpenDir without the archive meta.json records: %v; want an error naming %s", err, archive)
	}
}

// errMsg is err's message, or "" for nil.
func errMsg(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func TestPackRefusesModifiedBuild(t *testing.T) {
	dir := packFixture(t, true)
	before := files(t, dir)
	if err := results.Pack(dir); !errors.Is(err, results.ErrDirtyBuild) {
		t.Fatalf("Pack of a run by a modified build: %v; want ErrDirtyBuild", err)
	}
	if got := files(t, dir); !slices.Equal(got, before) {
		t.Errorf("refused Pack left %q; want the directory untouched, %q", got, before)
	}
}

// hdrjsDir is the npm package of the reader that checks our interval logs
// (tools/hdrjs): hdr-histogram-js, which shares no code with
// hdrhistogram-go.
var hdrjsDir = filepath.Join("..", "tools", "hdrjs")

// hdrjsCounts runs tools/hdrjs/check.js over the .hlog files in dir and
// returns each file's total count per tag ("NO TAG" for untagged
// intervals). Without node or the package's node_modules it skips the
// test, and fails it on CI (CI=true), where .ci/install-deps installs
// them.
func hdrjsCounts(t *testing.T, dir string) map[string]map[string]int64 {
	t.Helper()
	node, err := exec.LookPath("node")
	if err == nil {
		_, err = os.Stat(filepath.Join(hdrjsDir, "node_modules", "hdr-histogram-js"))
	}
	if err != nil {
		msg := "hdr-histogram-js check needs node and tools/hdrjs/node_modules (cd tools/hdrjs && npm ci): " + err.Error()
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	var stderr bytes.Buffer
	cmd := exec.Command(node, filepath.Join(hdrjsDir, "check.js"), dir)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node check.js %s: %v: %s", dir, err, stderr.String())
	}
	var counts map[string]map[string]int64
	if err := json.Unmarshal(out, &counts); err != nil {
		t.Fatalf("node check.js %s: %v", dir, err)
	}
	return counts
}

// checkHlogCounts compares what hdr-histogram-js counted in every interval
// log (hdrjsCounts) with the counts of ss, the summaries of the same run
// directory: a log holds either intervals (untagged) or one whole-run
// histogram (results.WholeRunTag), and its total is its summary's
// latency[phase].count. It returns how many logs it checked.
func checkHlogCounts(t *testing.T, counts map[string]map[string]int64, ss []results.Summary) int {
	t.Helper()
	const untagged = "NO TAG" // hdr-histogram-js's name for no tag
	ids := results.FileIDs(ss)
	checked := 0
	for i := range ss {
		for p := results.Phase(0); p < results.NumPhases; p++ {
			name := results.HlogName(ids[i], p)
			byTag, ok := counts[name]
			if !ok {
				t.Errorf("%s: no interval log read; want one per run and phase", name)
				continue
			}
			delete(counts, name)
			checked++
			var total int64
			for tag, n := range byTag {
				if tag != untagged && tag != results.WholeRunTag {
					t.Errorf("%s: tag %q; want none or %q", name, tag, results.WholeRunTag)
				}
				total += n
			}
			if len(byTag) > 1 {
				t.Errorf("%s: tags %v; want intervals or one whole-run histogram, not both", name, byTag)
			}
			if want := ss[i].Latency[p.String()].Count; total != want {
				t.Errorf("%s: hdr-histogram-js counts %d; want summary.json's %d", name, total, want)
			}
		}
	}
	for name := range counts {
		t.Errorf("%s: interval log of no run in summary.json", name)
	}
	return checked
}

// TestPackedHlogsReadByHdrJS reads the interval logs of a packed
// directory, taken out of its archive, with hdr-histogram-js: tagged and
// untagged, their totals are summary.json's counts.
func TestPackedHlogsReadByHdrJS(t *testing.T) {
	dir := packFixture(t, false)
	if err := results.Pack(dir); err != nil {
		t.Fatal(err)
	}
	fsys, err := results.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	_, ss, err := results.ReadDirDataFS(fsys)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "unpacked")
	if err := os.CopyFS(out, fsys); err != nil {
		t.Fatal(err)
	}
	counts := hdrjsCounts(t, filepath.Join(out, results.HlogDir))
	tags := map[string]bool{}
	for _, byTag := range counts {
		for tag := range byTag {
			tags[tag] = true
		}
	}
	if !tags[results.WholeRunTag] || len(tags) != 2 {
		t.Errorf("tags read: %v; want untagged intervals and %q histograms", tags, results.WholeRunTag)
	}
	if n, want := checkHlogCounts(t, counts, ss), len(ss)*int(results.NumPhases); n != want {
		t.Errorf("checked %d interval logs; want %d", n, want)
	}
}
