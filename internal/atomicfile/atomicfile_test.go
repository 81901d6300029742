package atomicfile_test

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/lockbench/lockbench/internal/atomicfile"
)

// writeString is a write function that writes s and then returns err.
func writeString(s string, err error) func(io.Writer) error {
	return func(w io.Writer) error {
		if _, werr := io.WriteString(w, s); werr != nil {
			return werr
		}
		return err
	}
}

func TestWrite(t *testing.T) {
	boom := errors.New("boom")
	cases := []struct {
		name    string
		old     string // "" : no file before
		write   func(io.Writer) error
		wantErr error
		want    string // the file's content afterwards
	}{
		// A new file is created with the content.
		{"create", "", writeString("new", nil), nil, "new"},
		// An existing file is replaced whole.
		{"replace", "old content", writeString("new", nil), nil, "new"},
		// A writer failing half-way leaves the old file as it was.
		{"failed write keeps old", "old", writeString("half of the new", boom), boom, "old"},
		// A failed first write leaves no file at all.
		{"failed create leaves none", "", writeString("half", boom), boom, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "plan.json")
			if tc.old != "" {
				if err := os.WriteFile(path, []byte(tc.old), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			err := atomicfile.Write(path, tc.write)
			if !errors.Is(err, tc.wantErr) {
				t.Errorf("got error %v; want %v", err, tc.wantErr)
			}
			got, rerr := os.ReadFile(path)
			switch {
			case tc.want == "" && !errors.Is(rerr, os.ErrNotExist):
				t.Errorf("file holds %q (read error %v); want no file", got, rerr)
			case tc.want != "" && string(got) != tc.want:
				t.Errorf("file holds %q (read error %v); want %q", got, rerr, tc.want)
			}
			entries, _ := os.ReadDir(dir)
			wantFiles := 0
			if tc.want != "" {
				wantFiles = 1
			}
			if len(entries) != wantFiles {
				var names []string
				for _, e := range entries {
					names = append(names, e.Name())
				}
				t.Errorf("directory holds %v; want %d file(s), no temporary left", names, wantFiles)
			}
			if tc.wantErr == nil {
				if info, err := os.Stat(path); err != nil || info.Mode().Perm() != atomicfile.Perm {
					t.Errorf("mode = %v (stat error %v); want %v", info.Mode().Perm(), err, atomicfile.Perm)
				}
			}
		})
	}
}

// A directory that cannot be written to fails before touching the file.
func TestWriteUnwritableDir(t *testing.T) {
	path := filepath.Join(t.TempDir(), "missing", "plan.json")
	if err := atomicfile.WriteFile(path, []byte("x")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("got error %v; want one wrapping os.ErrNotExist", err)
	}
}

func TestWriteFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "faketime")
	for _, content := range []string{"+0s\n", "+30s\n"} {
		if err := atomicfile.WriteFile(path, []byte(content)); err != nil {
			t.Fatal(err)
		}
		if got, _ := os.ReadFile(path); string(got) != content {
			t.Errorf("file holds %q; want %q", got, content)
		}
	}
}

func ExampleWriteFile() {
	path := filepath.Join(os.TempDir(), "lockbench-example.txt")
	defer os.Remove(path)
	if err := atomicfile.WriteFile(path, []byte("every reader sees all of this or none\n")); err != nil {
		panic(err)
	}
	b, _ := os.ReadFile(path)
	os.Stdout.Write(b)
	// Output: every reader sees all of this or none
}
