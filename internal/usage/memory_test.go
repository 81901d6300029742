package usage

import "testing"

func TestParseMemAvailable(t *testing.T) {
	cases := []struct {
		name string
		in   string
		want int64
		ok   bool
	}{
		// A real /proc/meminfo head.
		{"linux", "MemTotal:       24684092 kB\nMemFree:         1000000 kB\nMemAvailable:   23823676 kB\n", 23823676 * 1024, true},
		// Kernels before 3.14 have no MemAvailable line: nothing to check.
		{"old kernel", "MemTotal:       24684092 kB\nMemFree:         1000000 kB\n", 0, false},
		// A malformed figure is no figure.
		{"garbage", "MemAvailable:   lots kB\n", 0, false},
	}
	for _, tc := range cases {
		got, ok := parseMemAvailable([]byte(tc.in))
		if got != tc.want || ok != tc.ok {
			t.Errorf("%s: parseMemAvailable = %d, %v; want %d, %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
	if n, ok := MemAvailable(); ok && n <= 0 {
		t.Errorf("MemAvailable() = %d, true; want a positive figure", n)
	}
}

func TestFormatBytes(t *testing.T) {
	for n, want := range map[int64]string{
		812:             "812 B",
		3_400_000:       "3.4 MB",
		416_000_000_000: "416.0 GB",
	} {
		if got := FormatBytes(n); got != want {
			t.Errorf("FormatBytes(%d) = %q; want %q", n, got, want)
		}
	}
}
