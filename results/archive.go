package results

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/klauspost/compress/zstd"
)

// ArchiveFile is the packed data of a published run directory (Pack): a
// tar of every file but those a person opens, compressed with zstd.
const ArchiveFile = "data.tar.zst"

// ArchiveInfo is what meta.json records of a directory's archive.
type ArchiveInfo struct {
	// File is the archive's name in the directory, ArchiveFile.
	File string `json:"file"`
	// SHA256 is the hex SHA-256 of the archive's bytes; OpenDir refuses
	// an archive that does not match it.
	SHA256 string `json:"sha256"`
	// Bytes is the archive's size and Files the number of files it holds.
	Bytes int64 `json:"bytes"`
	Files int   `json:"files"`
}

// ErrDirtyBuild is Pack's refusal of a directory written by a lockbench
// built from a work tree with uncommitted changes: no published figure
// may come from code that is in no commit.
var ErrDirtyBuild = errors.New("results: the run's build has uncommitted changes")

// ErrArchiveSum is OpenDir's refusal of an archive whose SHA-256 is not
// the one meta.json records.
var ErrArchiveSum = errors.New("results: archive checksum mismatch")

// staysVisible reports whether the file name (slash-separated, relative to
// the run directory of layout l) stays out of the archive: what a person
// or a page opens without lockbench (meta.json, the reports and the PNG
// charts they show), and the archive itself. Everything else is data that
// lockbench reads, whatever its folder: interval logs today, and any
// folder a later version adds.
func staysVisible(name string, l Layout) bool {
	switch name {
	case MetaFile, ReportFile, ReportHTMLFile, ArchiveFile:
		return true
	}
	return path.Ext(name) == ".png" && path.Dir(name) == path.Clean("./"+l.Charts)
}

// Pack packs the finished run directory dir for publishing: every regular
// file but meta.json, report.md, report.html and the PNG charts goes into
// one archive, dir/ArchiveFile, and is removed once the archive has been
// read back whole ("Packing" in the package doc). It refuses
// (ErrDirtyBuild) a directory whose meta.json says its build had
// uncommitted changes.
func Pack(dir string) error {
	fsys, err := OpenDir(dir)
	if err != nil {
		return err
	}
	meta, err := readMeta(fsys)
	if err != nil {
		return err
	}
	if meta.Build.Modified {
		return fmt.Errorf("%w: %s was written by %s", ErrDirtyBuild, dir, meta.Build)
	}
	l := LayoutOfFS(fsys)
	var names []string // fs.WalkDir walks in lexical order: names is sorted
	err = fs.WalkDir(fsys, ".", func(name string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() && !staysVisible(name, l) {
			names = append(names, name)
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("results: pack: %w", err)
	}
	if len(names) == 0 {
		return fmt.Errorf("results: pack: %s holds no data to pack", dir)
	}
	files := make(map[string][]byte, len(names))
	for _, name := range names {
		if files[name], err = fs.ReadFile(fsys, name); err != nil {
			return fmt.Errorf("results: pack: %w", err)
		}
	}
	archive := filepath.Join(dir, ArchiveFile)
	sum, n := sha256.New(), &countWriter{}
	err = WriteFileAtomic(archive, func(w io.Writer) error {
		return writeArchive(io.MultiWriter(w, sum, n), names, files, meta.Date)
	})
	if err != nil {
		return err
	}
	// Nothing is removed before the archive reads back with every file
	// as it was packed.
	if err := checkArchive(archive, files); err != nil {
		return err
	}
	meta.Archive = &ArchiveInfo{File: ArchiveFile, SHA256: hex.EncodeToString(sum.Sum(nil)), Bytes: n.n, Files: len(names)}
	if err := WriteMeta(dir, meta); err != nil {
		return err
	}
	return removePacked(dir, names)
}

// writeArchive writes the files names (sorted, slash-separated) as a tar
// compressed with zstd at its best level, each file dated date to the
// second (the Unix epoch when zero). One encoder goroutine: the same
// input gives the same bytes.
func writeArchive(w io.Writer, names []string, files map[string][]byte, date time.Time) error {
	mtime := time.Unix(date.Unix(), 0).UTC()
	if date.IsZero() {
		mtime = time.Unix(0, 0).UTC()
	}
	zw, err := zstd.NewWriter(w, zstd.WithEncoderLevel(zstd.SpeedBestCompression), zstd.WithEncoderConcurrency(1))
	if err != nil {
		return err
	}
	tw := tar.NewWriter(zw)
	for _, name := range names {
		data := files[name]
		h := &tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: int64(len(data)), ModTime: mtime}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if _, err := tw.Write(data); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return zw.Close()
}

// checkArchive reads the archive at path back and compares it with the
// files packed into it.
func checkArchive(path string, files map[string][]byte) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("results: %w", err)
	}
	got, err := readArchive(data)
	if err != nil {
		return fmt.Errorf("results: %s: %w", path, err)
	}
	if len(got) != len(files) {
		return fmt.Errorf("results: %s reads back %d files; want the %d packed", path, len(got), len(files))
	}
	for name, want := range files {
		if !bytes.Equal(got[name], want) {
			return fmt.Errorf("results: %s: %s does not read back as packed", path, name)
		}
	}
	return nil
}

// removePacked removes the packed files names from dir, then the folders
// they leave empty, deepest first.
func removePacked(dir string, names []string) error {
	var folders []string
	for _, name := range names {
		err := os.Remove(filepath.Join(dir, filepath.FromSlash(name)))
		if err != nil && !errors.Is(err, fs.ErrNotExist) { // only in the archive before
			return fmt.Errorf("results: pack: %w", err)
		}
		for d := path.Dir(name); d != "."; d = path.Dir(d) {
			folders = append(folders, d)
		}
	}
	slices.Sort(folders)
	folders = slices.Compact(folders)
	slices.Reverse(folders) // a folder sorts before what it holds
	for _, d := range folders {
		p := filepath.Join(dir, filepath.FromSlash(d))
		if entries, err := os.ReadDir(p); err == nil && len(entries) == 0 {
			if err := os.Remove(p); err != nil {
				return fmt.Errorf("results: pack: %w", err)
			}
		}
	}
	return nil
}

// countWriter counts the bytes written through it.
type countWriter struct{ n int64 }

func (c *countWriter) Write(p []byte) (int, error) {
	c.n += int64(len(p))
	return len(p), nil
}

// OpenDir returns the run directory dir as one file system: its own files
// and, when it was packed, those of its archive (ArchiveFile), which win
// over a file of the same name on disk. The archive is checked against
// the SHA-256 meta.json records (ErrArchiveSum names the file when they
// differ) and decompressed once, into memory: a directory's data is tens of
// megabytes (the reference run's, 26 MB). A directory without an archive
// is read from disk as it is. Errors name a file on disk by its path, dir
// included.
func OpenDir(dir string) (fs.FS, error) {
	disk := newDirFS(dir, nil)
	meta, err := readMeta(disk)
	if err != nil {
		return nil, err
	}
	archive := filepath.Join(dir, ArchiveFile)
	data, err := os.ReadFile(archive)
	switch {
	case errors.Is(err, fs.ErrNotExist) && meta.Archive == nil:
		return disk, nil
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("results: %s is missing; %s records it", archive, MetaFile)
	case err != nil:
		return nil, fmt.Errorf("results: %w", err)
	}
	if meta.Archive != nil {
		got := sha256.Sum256(data)
		if hex.EncodeToString(got[:]) != meta.Archive.SHA256 {
			return nil, fmt.Errorf("%w: %s has SHA-256 %x; %s records %s", ErrArchiveSum, archive, got, MetaFile, meta.Archive.SHA256)
		}
	}
	files, err := readArchive(data)
	if err != nil {
		return nil, fmt.Errorf("results: %s: %w", archive, err)
	}
	return newDirFS(dir, files), nil
}

// readArchive decompresses an archive into its files, by slash-separated
// path. It refuses anything but regular files and folders at paths inside
// the directory.
func readArchive(data []byte) (map[string][]byte, error) {
	zr, err := zstd.NewReader(bytes.NewReader(data), zstd.WithDecoderConcurrency(1))
	if err != nil {
		return nil, err
	}
	defer zr.Close()
	tr := tar.NewReader(zr)
	files := map[string][]byte{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files, nil
		}
		if err != nil {
			return nil, err
		}
		name := path.Clean(h.Name)
		if !fs.ValidPath(name) || name == "." {
			return nil, fmt.Errorf("entry %q is not a path inside the run directory", h.Name)
		}
		switch h.Typeflag {
		case tar.TypeDir:
			continue
		case tar.TypeReg:
		default:
			return nil, fmt.Errorf("entry %q is not a regular file", h.Name)
		}
		if files[name], err = io.ReadAll(tr); err != nil {
			return nil, err
		}
	}
}

// dirFS is OpenDir's view of a run directory: the archive's files, if
// any, over the directory's own.
type dirFS struct {
	dir     string
	disk    fs.FS
	archive map[string][]byte
	// folders are the folders the archive's paths imply, "." among them
	// when there is an archive.
	folders map[string]bool
}

var (
	_ fs.ReadDirFS  = (*dirFS)(nil)
	_ fs.ReadFileFS = (*dirFS)(nil)
	_ fs.StatFS     = (*dirFS)(nil)
)

// newDirFS is the view of the directory dir and the files of its archive
// (nil when it has none).
func newDirFS(dir string, archive map[string][]byte) *dirFS {
	d := &dirFS{dir: dir, disk: os.DirFS(dir), archive: archive, folders: map[string]bool{}}
	if archive != nil {
		d.folders["."] = true
	}
	for name := range archive {
		for f := path.Dir(name); f != "."; f = path.Dir(f) {
			d.folders[f] = true
		}
	}
	return d
}

// archivedInfo describes a file of the archive (size > 0 or not), or one
// of its folders.
func archivedInfo(name string, size int64, folder bool) fs.FileInfo {
	h := &tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o444, Size: size}
	if folder {
		h.Typeflag, h.Mode, h.Size = tar.TypeDir, 0o555|int64(fs.ModeDir), 0
	}
	return h.FileInfo()
}

func (d *dirFS) Open(name string) (fs.File, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	if data, ok := d.archive[name]; ok {
		return &archivedFile{info: archivedInfo(name, int64(len(data)), false), r: bytes.NewReader(data)}, nil
	}
	if d.folders[name] {
		entries, err := d.ReadDir(name)
		if err != nil {
			return nil, err
		}
		return &archivedFolder{info: archivedInfo(name, 0, true), entries: entries}, nil
	}
	f, err := d.disk.Open(name)
	return f, d.onDisk(err)
}

// onDisk gives an error of the directory's own file system the file's
// path, dir included, as os.Open would: os.DirFS names it relative to dir.
func (d *dirFS) onDisk(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		pe.Path = filepath.Join(d.dir, filepath.FromSlash(pe.Path))
	}
	return err
}

func (d *dirFS) ReadFile(name string) ([]byte, error) {
	if data, ok := d.archive[name]; ok {
		return bytes.Clone(data), nil
	}
	data, err := fs.ReadFile(d.disk, name)
	return data, d.onDisk(err)
}

func (d *dirFS) Stat(name string) (fs.FileInfo, error) {
	if data, ok := d.archive[name]; ok {
		return archivedInfo(name, int64(len(data)), false), nil
	}
	if d.folders[name] {
		return archivedInfo(name, 0, true), nil
	}
	info, err := fs.Stat(d.disk, name)
	return info, d.onDisk(err)
}

// ReadDir lists a folder's entries on disk and in the archive, sorted by
// name; an archived file hides one of the same name on disk.
func (d *dirFS) ReadDir(name string) ([]fs.DirEntry, error) {
	own, err := fs.ReadDir(d.disk, name)
	if !d.folders[name] || (err != nil && !errors.Is(err, fs.ErrNotExist)) {
		return own, d.onDisk(err)
	}
	byName := map[string]fs.DirEntry{}
	for _, e := range own {
		byName[e.Name()] = e
	}
	for f := range d.folders {
		if f != "." && path.Dir(f) == name {
			byName[path.Base(f)] = fs.FileInfoToDirEntry(archivedInfo(f, 0, true))
		}
	}
	for file, data := range d.archive {
		if path.Dir(file) == name {
			byName[path.Base(file)] = fs.FileInfoToDirEntry(archivedInfo(file, int64(len(data)), false))
		}
	}
	entries := make([]fs.DirEntry, 0, len(byName))
	for _, e := range byName {
		entries = append(entries, e)
	}
	slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return entries, nil
}

// archivedFile is an open file of the archive.
type archivedFile struct {
	info fs.FileInfo
	r    *bytes.Reader
}

func (f *archivedFile) Stat() (fs.FileInfo, error) { return f.info, nil }
func (f *archivedFile) Read(p []byte) (int, error) { return f.r.Read(p) }
func (f *archivedFile) Close() error               { return nil }

// archivedFolder is an open folder of the archive, listing what ReadDir
// lists.
type archivedFolder struct {
	info    fs.FileInfo
	entries []fs.DirEntry
}

func (f *archivedFolder) Stat() (fs.FileInfo, error) { return f.info, nil }
func (f *archivedFolder) Close() error               { return nil }
func (f *archivedFolder) Read([]byte) (int, error) {
	return 0, &fs.PathError{Op: "read", Path: f.info.Name(), Err: errors.New("is a directory")}
}

// ReadDir is fs.ReadDirFile's: the next n entries, or all that are left
// when n <= 0.
func (f *archivedFolder) ReadDir(n int) ([]fs.DirEntry, error) {
	if n <= 0 || n >= len(f.entries) {
		out := f.entries
		f.entries = nil
		if n > 0 && len(out) == 0 {
			return nil, io.EOF
		}
		return out, nil
	}
	out := f.entries[:n]
	f.entries = f.entries[n:]
	return out, nil
}
