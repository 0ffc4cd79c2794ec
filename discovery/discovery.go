// Package discovery writes and reads the discovery file, <state-dir>/contextd.json,
// through which the Pi extension finds a running contextd: its URL, Unix socket,
// process id and version (docs/design.md §7 "Discovery"). contextd writes it once it
// listens and removes it on a clean shutdown. The extension trusts it only when it
// and the state directory are the user's and nobody else may write them, and sends
// the token only after contextd proved it holds it (api/proof.go,
// extension/src/transport.ts), so a stale file left by a crash, naming a port
// another user bound since, costs one refused proof.
package discovery

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// FileName is the discovery file's name inside the state directory.
const FileName = "contextd.json"

// Info is the discovery file's content.
type Info struct {
	// URL is the base URL contextd serves on, e.g. http://127.0.0.1:7467
	// (the listener's real address, so --addr 127.0.0.1:0 works).
	URL string `json:"url"`
	// Socket is the absolute path of the Unix domain socket contextd also
	// serves on (--socket), "" when it serves TCP only. The extension
	// prefers it: only the user can open a socket in the state directory.
	Socket string `json:"socket,omitempty"`
	// PID is the serving process's id.
	PID int `json:"pid"`
	// Version is contextd's version (the module version, or "devel").
	Version string `json:"version"`
}

// Path returns the discovery file's path in stateDir.
func Path(stateDir string) string { return filepath.Join(stateDir, FileName) }

// Write replaces the discovery file in stateDir with info, atomically (a
// temporary file renamed over it) and with mode 0600 like the token beside it.
func Write(stateDir string, info Info) error {
	b, err := json.Marshal(info)
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(stateDir, ".contextd-*.json")
	if err != nil {
		return fmt.Errorf("write discovery file: %w", err)
	}
	tmp := f.Name()
	if _, err := f.Write(append(b, '\n')); err != nil {
		f.Close()
		os.Remove(tmp)
		return fmt.Errorf("write discovery file: %w", err)
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write discovery file: %w", err)
	}
	if err := os.Rename(tmp, Path(stateDir)); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write discovery file: %w", err)
	}
	return nil
}

// Read returns the discovery file of stateDir. Errors: fs.ErrNotExist when
// there is none; a decoding error for a file that is not an Info object.
func Read(stateDir string) (Info, error) {
	var info Info
	b, err := os.ReadFile(Path(stateDir))
	if err != nil {
		return info, err
	}
	if err := json.Unmarshal(b, &info); err != nil {
		return info, fmt.Errorf("discovery file %s: %w", Path(stateDir), err)
	}
	return info, nil
}

// Remove deletes the discovery file of stateDir if it still names pid (a
// newer contextd may have replaced it). A missing file is not an error.
func Remove(stateDir string, pid int) error {
	info, err := Read(stateDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err == nil && info.PID != pid {
		return nil
	}
	if err := os.Remove(Path(stateDir)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}
