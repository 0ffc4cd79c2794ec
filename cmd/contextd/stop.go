package main

// `contextd stop`: ends the contextd serving a state directory, found
// through its discovery file as the other client commands find it
// (client.Locate: the same owner and mode checks, the socket before the
// URL), with SIGTERM (the graceful
// shutdown serve does on a signal), and waits for the process to exit, so
// that a contextd started next (by hand, or by the Pi extension's launcher
// after an upgrade) can take the state directory's lock.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"syscall"
	"time"

	"contextd/client"
	"contextd/discovery"
)

// runStop is `contextd stop [--state-dir DIR] [--timeout 15s]`. No
// contextd running for the state directory is not an error (it says so);
// a discovery file whose URL does not answer /healthz is stale and is
// removed. Errors: the discovery file, its state directory or socket
// cannot be trusted (client.Locate), the process cannot be signalled, or
// has not exited within --timeout.
func runStop(ctx context.Context, cmd command, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fset := newFlagSet(cmd, stderr)
	state := fset.String("state-dir", defaultStateDir(getenv), "state directory of the contextd to stop (env CONTEXTD_STATE_DIR; default $PI_CODING_AGENT_DIR/contextd or ~/.pi/agent/contextd)")
	timeout := durationFlag(fset, "timeout", 15*time.Second, "how long to wait for it to exit, such as 15s or 1m")
	if err := parseArgs(fset, args, stdout); err != nil {
		return err
	}
	if err := noArgs(fset); err != nil {
		return err
	}
	if *timeout <= 0 {
		return fmt.Errorf("--timeout %s: use a positive duration such as 15s", *timeout)
	}
	ep, info, err := client.Locate(*state)
	if errors.Is(err, fs.ErrNotExist) {
		fmt.Fprintf(stdout, "no contextd is running for %s (no %s)\n", *state, discovery.Path(*state))
		return nil
	}
	if err != nil {
		return err
	}
	hctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if err := client.Health(hctx, ep.OneConnection(), ep); err != nil || info.PID <= 0 {
		// A crash leaves the file behind; its pid may be another process by now.
		if err := discovery.Remove(*state, info.PID); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "no contextd is running for %s (%s named pid %d at %s, which does not answer; removed)\n", *state, discovery.Path(*state), info.PID, ep.Label)
		return nil
	}
	p, err := os.FindProcess(info.PID)
	if err == nil {
		err = p.Signal(syscall.SIGTERM)
	}
	if err != nil {
		return fmt.Errorf("cannot stop contextd pid %d (%s): %w", info.PID, info.URL, err)
	}
	deadline := time.Now().Add(*timeout)
	for running(p) {
		if time.Now().After(deadline) {
			return fmt.Errorf("contextd pid %d did not exit within %s of SIGTERM; its log says why, or end it with kill -9 %d", info.PID, *timeout, info.PID)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	fmt.Fprintf(stdout, "stopped contextd pid %d (%s, version %s)\n", info.PID, info.URL, info.Version)
	return nil
}

// running reports whether p still runs: it can be signalled and, where
// /proc tells (Linux), is not a zombie waiting for a parent that does not
// reap it (proc(5): the state after the command name in /proc/PID/stat).
func running(p *os.Process) bool {
	if p.Signal(syscall.Signal(0)) != nil {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.Pid))
	if err != nil {
		return true
	}
	i := strings.LastIndexByte(string(b), ')')
	return i < 0 || i+2 >= len(b) || b[i+2] != 'Z'
}
