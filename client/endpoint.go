package client

// Where the client commands (healthcheck, sessions, stop) reach a running
// contextd, found as the extension finds it (extension/src/transport.ts
// readDiscovery; docs/security.md "The Pi extension talks only to its own
// contextd"): an address given by --addr, else the discovery file of the
// state directory, whose Unix socket is preferred to its URL. TCP is used
// only when the discovery file names no socket (contextd --socket off, or
// a socket path too long to bind); a named socket that does not answer is
// not an invitation to try the URL, as in the extension.

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"

	"contextd/discovery"
)

// Endpoint is where a client command reaches contextd.
type Endpoint struct {
	// Socket is the absolute path of contextd's Unix domain socket; ""
	// for TCP.
	Socket string
	// Base is the base URL requests are made against: http://HOST:PORT
	// over TCP; http://localhost over the socket (a loopback Host, which
	// api's Host check accepts; the connection goes to Socket).
	Base string
	// Label names the endpoint in messages: unix:/path or
	// http://HOST:PORT, as the extension names it.
	Label string
}

// TCP is the endpoint of a base URL (http://HOST:PORT, from BaseURL or a
// discovery file).
func TCP(base string) Endpoint {
	base = strings.TrimRight(base, "/")
	return Endpoint{Base: base, Label: base}
}

// Unix is the endpoint of the Unix socket at path (absolute).
func Unix(path string) Endpoint {
	return Endpoint{Socket: path, Base: "http://localhost", Label: "unix:" + path}
}

// NeedsProof reports whether the listener must prove it holds the token
// (Prove, GET /v1/proof) before a request carries it: over TCP, yes; over
// a socket Locate returned, no.
//
// Any local user may bind a loopback port that a stopped or crashed
// contextd left, so over TCP only the proof tells contextd from a
// squatter (docs/security.md). A socket Locate returns passed CheckSocket:
// the socket file belongs to this user and lies in a directory of this
// user's that nobody else may write. bind(2) creates the socket file with
// the binding process's uid, and only those who may write the directory
// can create, rename or remove its entries, so the process listening
// there runs as this user (or root), and can read the token file (0600,
// the user's) anyway: sending it the token discloses nothing. The proof
// would only tell this user's contextd of another state directory from
// this one, and such a contextd refuses the token with a 401 naming its
// token file, which Sessions reports. The extension proves on the socket
// too (extension/src/transport.ts): it does not check the socket's owner.
func (e Endpoint) NeedsProof() bool { return e.Socket == "" }

// NotRunningError is the error of a request to an endpoint where nothing
// listens: the TCP connection was refused (ECONNREFUSED) or the Unix
// socket file is missing (ENOENT) or has no listener (ECONNREFUSED), so
// no contextd runs there. Err is the dial error.
type NotRunningError struct {
	// Label is the endpoint's Label.
	Label string
	Err   error
}

func (e *NotRunningError) Error() string { return "contextd is not running at " + e.Label }

// Unwrap returns the dial error.
func (e *NotRunningError) Unwrap() error { return e.Err }

// get sends GET path (with its query) to e with hc, carrying token when
// it is not "". Errors: the request's; *NotRunningError when nothing
// listens at e; else "contextd at LABEL is not answering" wrapping hc's.
func (e Endpoint) get(ctx context.Context, hc *http.Client, path, token string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.Base+path, nil)
	if err != nil {
		return nil, err
	}
	if token != "" {
		req.Header.Set(TokenHeader, token)
	}
	resp, err := hc.Do(req)
	if errors.Is(err, syscall.ECONNREFUSED) || (e.Socket != "" && errors.Is(err, syscall.ENOENT)) {
		return nil, &NotRunningError{Label: e.Label, Err: err}
	}
	if err != nil {
		return nil, fmt.Errorf("contextd at %s is not answering: %w", e.Label, err)
	}
	return resp, nil
}

// OneConnection returns an HTTP client of e that dials at most one
// connection (the Unix socket, or TCP), uses no proxy and follows no
// redirect, so that a request after Prove travels on the connection the
// proof came over (or fails with errSecondConnection).
func (e Endpoint) OneConnection() *http.Client {
	var dialed atomic.Bool
	var d net.Dialer
	return &http.Client{
		Transport: &http.Transport{
			MaxConnsPerHost:     1,
			MaxIdleConnsPerHost: 1,
			DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
				if !dialed.CompareAndSwap(false, true) {
					return nil, errSecondConnection
				}
				if e.Socket != "" {
					return d.DialContext(ctx, "unix", e.Socket)
				}
				return d.DialContext(ctx, network, addr)
			},
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// Locate returns the endpoint the discovery file of stateDir names, and
// the file's content: its socket when it names one that CheckSocket
// trusts, else its URL. The discovery file and stateDir must pass
// CheckDiscovery first. Errors: fs.ErrNotExist (wrapped) when there is no
// discovery file, so the caller says no contextd runs; otherwise one
// sentence saying what to do (an untrusted file, directory or socket, a
// file that is not a discovery object or names no address). A named
// socket that is missing is returned as is: contextd is not running, and
// the first request says so.
func Locate(stateDir string) (Endpoint, discovery.Info, error) {
	file := discovery.Path(stateDir)
	if err := CheckDiscovery(stateDir, file); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return Endpoint{}, discovery.Info{}, fmt.Errorf("no discovery file %s: %w", file, err)
		}
		return Endpoint{}, discovery.Info{}, err
	}
	info, err := discovery.Read(stateDir)
	if err != nil {
		return Endpoint{}, info, fmt.Errorf("read the discovery file %s: %w; stop contextd, delete the file and start contextd again, or pass the --state-dir of the running contextd", file, err)
	}
	if info.Socket != "" {
		if !filepath.IsAbs(info.Socket) {
			return Endpoint{}, info, fmt.Errorf("the discovery file %s names the socket %q, not an absolute path; stop contextd, delete the file and start contextd again", file, info.Socket)
		}
		if err := CheckSocket(info.Socket); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return Endpoint{}, info, err
		}
		return Unix(info.Socket), info, nil
	}
	if info.URL == "" {
		return Endpoint{}, info, fmt.Errorf("the discovery file %s names no url; stop contextd, delete the file and start contextd again", file)
	}
	return TCP(info.URL), info, nil
}

// CheckSocket returns nil when the Unix socket at path may be trusted to
// be this user's (the rule NeedsProof relies on): its directory belongs
// to this user and nobody else may write it (mode & 0o022 == 0, as
// CheckDiscovery asks of the state directory), and path is a socket (not
// a symbolic link) that belongs to this user. A missing socket in a
// trusted directory is fs.ErrNotExist. Otherwise the error is one
// sentence saying what to do.
func CheckSocket(path string) error {
	dir := filepath.Dir(path)
	dst, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("the directory %s of the contextd socket %s cannot be read (%w); start contextd again (`contextd serve`)", dir, path, err)
	}
	why := "it is not a directory"
	if dst.IsDir() {
		why = notPrivate(dst, 0o022)
	}
	if why != "" {
		return fmt.Errorf("the directory %s of the contextd socket %s cannot be trusted: %s, so another user could put a socket of their own there; `chmod 700 %s` if it is yours, else restart contextd with a --socket in a directory of your own", dir, path, why, dir)
	}
	st, err := os.Lstat(path)
	if err != nil {
		return err
	}
	why = "it is not a socket"
	if st.Mode().Type() == fs.ModeSocket {
		why = notPrivate(st, 0)
	}
	if why != "" {
		return fmt.Errorf("the contextd socket %s cannot be trusted: %s; stop contextd, delete it and start contextd again", path, why)
	}
	return nil
}
