//go:build !(linux || darwin || freebsd || openbsd || netbsd || dragonfly)

package emulator

import "os"

// tryLock is the fallback of platforms without flock(2) (Windows, Plan 9,
// WebAssembly...): the LOCK file records the owner's process id, but
// nothing refuses a second server; keep one server per directory by hand.
func tryLock(*os.File) (bool, error) { return true, nil }
