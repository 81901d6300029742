package cli

import "syscall"

// freeBytes is the space an unprivileged writer has left on the file
// system of path; ok is false when it cannot be told.
func freeBytes(path string) (free int64, ok bool) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil {
		return 0, false
	}
	return int64(st.Bavail) * int64(st.Bsize), true
}
