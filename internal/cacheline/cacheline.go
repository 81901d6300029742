// Package cacheline checks, in tests, how a hot struct sits on the CPU's
// cache lines: that the fields a lock cycle touches share the lines meant
// for them, that the struct is a whole number of lines (so that the
// allocator starts each on one), and that it does start on one. The
// harness's CPU beside a real lock client is mostly cache misses, one per
// line a cycle touches (README, "Is the harness what is being measured?"),
// so a field added in the wrong place costs every cycle.
package cacheline

import (
	"testing"
	"unsafe"
)

// Size is the cache line the layouts are made for: 64 bytes (x86-64, and
// most arm64).
const Size = 64

// maxSmall is the largest object Go's allocator places without a header
// before it (objects with pointers over 512 bytes get 8 bytes of header,
// which moves them off the line their size class starts).
const maxSmall = 512

// Field is a field's place in its struct: its offset and size (with
// unsafe.Offsetof and unsafe.Sizeof; a nested field's offset is the sum of
// the offsets on its path).
type Field struct {
	Off, Size uintptr
}

// Within reports, as test errors, each field of typ that does not lie in
// bytes [lo, hi) of it.
func Within(t testing.TB, typ string, lo, hi uintptr, fields map[string]Field) {
	t.Helper()
	for name, f := range fields {
		if f.Off < lo || f.Off+f.Size > hi {
			t.Errorf("%s.%s spans bytes %d–%d; want within %d–%d", typ, name, f.Off, f.Off+f.Size, lo, hi)
		}
	}
}

// Lines reports a struct of size bytes that is not a whole number of cache
// lines small enough to have no allocation header: the allocator would not
// start every one of them on a line.
func Lines(t testing.TB, typ string, size uintptr) {
	t.Helper()
	if size%Size != 0 || size > maxSmall {
		t.Errorf("unsafe.Sizeof(%s{}) = %d; want a multiple of %d, at most %d (no allocation header)", typ, size, Size, maxSmall)
	}
}

// Aligned reports, as a fatal test error, a p that does not start a cache
// line.
func Aligned(t testing.TB, what string, p unsafe.Pointer) {
	t.Helper()
	if a := uintptr(p); a%Size != 0 {
		t.Fatalf("%s at %#x; want a multiple of %d", what, a, Size)
	}
}
