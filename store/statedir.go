package store

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// LockStateDir makes sure one contextd at a time uses the state directory
// dir (docs/security.md). It creates dir (mode 0700) or narrows an existing
// one to 0700 (it holds the token and note snapshots), then takes
// exclusive, non-blocking flock(2) locks held on open descriptors for as
// long as the process runs: one on the directory itself and one on
// <dir>/lock (the file earlier versions lock). Deleting or replacing
// <dir>/lock does not release the directory's lock, so a second instance
// is still refused. The returned func releases both.
//
// Errors: "another contextd is using the state directory …" when the lock
// is held, or the os error.
func LockStateDir(dir string) (func(), error) {
	if err := privateDir(dir); err != nil {
		return nil, err
	}
	d, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	busy := fmt.Errorf("another contextd is using the state directory %s; stop it or pass another --state-dir", dir)
	if err := syscall.Flock(int(d.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		d.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, busy
		}
		return nil, fmt.Errorf("lock the state directory %s: %w", dir, err)
	}
	f, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		d.Close()
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		d.Close()
		return nil, busy
	}
	return func() { f.Close(); d.Close() }, nil
}

// privateDir creates dir with mode 0700, or narrows an existing directory
// to 0700.
func privateDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create state directory: %w", err)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("state directory %s is not a directory", dir)
	}
	if fi.Mode().Perm() != 0o700 {
		// A directory owned by someone else (a volume mounted into a
		// container) cannot be narrowed; every file contextd keeps in it
		// is 0600 on its own, so that is not fatal.
		if err := os.Chmod(dir, 0o700); err != nil && !errors.Is(err, fs.ErrPermission) {
			return err
		}
	}
	return nil
}

// privateFile creates path (empty, mode 0600) if missing, or narrows an
// existing file that others may read or write to 0600. SQLite gives a
// database's -wal and -shm files the mode of the database file.
func privateFile(path string) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return f.Chmod(0o600)
	}
	return nil
}

// narrowIfExists narrows an existing file to 0600; a missing one is fine.
func narrowIfExists(path string) error {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return os.Chmod(path, 0o600)
	}
	return nil
}
