package emulator

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// One data directory has one owner. Start takes an exclusive lock on the
// file LOCK in Options.DataDir (flock(2) where the platform has it,
// dirlock_flock.go) and writes its process id into it; a second server on
// the directory, in another process or in the same one, is refused with an
// error naming the holder. The lock belongs to the open file, so the
// system releases it when the holder exits, however it exits: a LOCK file
// left behind by a killed process does not block the next start.

// lockFile is the lock's name in the data directory.
const lockFile = "LOCK"

// ErrDataDirInUse is the error (matched with errors.Is) that Start returns
// when another server, in this process or another, holds Options.DataDir.
var ErrDataDirInUse = errors.New("emulator: data directory in use")

// dirLock is a held lock on a data directory; release frees it.
type dirLock struct {
	f *os.File
}

// lockDataDir takes the lock of dir, or fails with ErrDataDirInUse naming
// the holder's process id (as it wrote it in the LOCK file).
func lockDataDir(dir string) (*dirLock, error) {
	path := filepath.Join(dir, lockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("emulator: lock data directory: %w", err)
	}
	held, err := tryLock(f)
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("emulator: lock data directory %s: %w", dir, err)
	}
	if !held {
		b, _ := os.ReadFile(path)
		_ = f.Close()
		holder := "another process"
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 0 {
			holder = "process " + strconv.Itoa(pid)
			if pid == os.Getpid() {
				holder += " (this process: another emulator.Server not yet closed)"
			}
		}
		return nil, fmt.Errorf("%w: %s is held by %s (lock file %s); stop that emulator or give this one another data directory", ErrDataDirInUse, dir, holder, path)
	}
	err = f.Truncate(0)
	if err == nil {
		_, err = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("emulator: lock data directory %s: %w", dir, err)
	}
	return &dirLock{f: f}, nil
}

// release frees the lock. The LOCK file stays: removing it would race a
// server that has just opened it.
func (l *dirLock) release() error {
	if l == nil {
		return nil
	}
	return l.f.Close()
}
