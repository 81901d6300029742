package cacheline

import (
	"fmt"
	"testing"
	"unsafe"
)

// failures records what the checks report instead of failing the test.
type failures struct {
	testing.TB
	got []string
}

func (f *failures) Helper() {}
func (f *failures) Errorf(format string, args ...any) {
	f.got = append(f.got, fmt.Sprintf(format, args...))
}
func (f *failures) Fatalf(format string, args ...any) { f.Errorf(format, args...) }

func TestChecksReport(t *testing.T) {
	var s struct {
		a int64
		b [60]byte
		c int64 // bytes 72–80 (b ends at 68, c aligned to 72)
	}
	f := &failures{TB: t}
	Within(f, "s", 0, 64, map[string]Field{
		"a": {unsafe.Offsetof(s.a), unsafe.Sizeof(s.a)},
		"c": {unsafe.Offsetof(s.c), unsafe.Sizeof(s.c)},
	})
	Lines(f, "s", unsafe.Sizeof(s)) // 80: not a whole number of lines
	Lines(f, "big", 1024)           // over 512
	Lines(f, "ok", 128)
	buf := make([]byte, 2*Size)
	Aligned(f, "one past a line", unsafe.Add(unsafe.Pointer(unsafe.SliceData(buf)), (Size+1-uintptr(unsafe.Pointer(unsafe.SliceData(buf)))%Size)%Size))
	if len(f.got) != 4 {
		t.Fatalf("reported %d problems; want 4 (c past the line, s's size, big's size, the misaligned pointer): %q", len(f.got), f.got)
	}
}
