package usage

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
)

// meminfoPath is where Linux says how much memory is available.
const meminfoPath = "/proc/meminfo"

// MemAvailable returns the memory the kernel says can be allocated now
// without swapping (MemAvailable in /proc/meminfo), in bytes; ok is false
// where there is no such figure (not Linux, or a kernel before 3.14), and
// callers then check nothing.
func MemAvailable() (bytes int64, ok bool) {
	b, err := os.ReadFile(meminfoPath)
	if err != nil {
		return 0, false
	}
	return parseMemAvailable(b)
}

// parseMemAvailable reads the MemAvailable line ("MemAvailable: 123 kB")
// of a /proc/meminfo.
func parseMemAvailable(b []byte) (int64, bool) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := bytes.Fields(sc.Bytes())
		if len(f) != 3 || string(f[0]) != "MemAvailable:" || string(f[2]) != "kB" {
			continue
		}
		kb, err := strconv.ParseInt(string(f[1]), 10, 64)
		if err != nil || kb < 0 || kb > 1<<53 {
			return 0, false
		}
		return kb * 1024, true
	}
	return 0, false
}

// FormatBytes formats n bytes for a person, in powers of 1000: "812 B",
// "3.4 MB", "416.0 GB".
func FormatBytes(n int64) string {
	const unit = 1000
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 5; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %cB", float64(n)/float64(div), "kMGTPE"[exp])
}
