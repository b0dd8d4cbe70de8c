package bitemporal_test

import (
	"os"
	"syscall"
)

// dropFileCache writes path's dirty pages out and asks the kernel to drop
// the file from its page cache (POSIX_FADV_DONTNEED), so that the next
// reads of it go to the disk. Only that file is affected.
func dropFileCache(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return err
	}
	const fadvDontNeed = 4
	if _, _, errno := syscall.Syscall6(syscall.SYS_FADVISE64, f.Fd(), 0, 0, fadvDontNeed, 0, 0); errno != 0 {
		return errno
	}
	return nil
}
