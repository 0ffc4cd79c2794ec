// Package client is the small HTTP client the contextd command uses to
// talk to a running contextd, over its Unix socket or TCP (endpoint.go):
// `contextd healthcheck` (GET /healthz, for container HEALTHCHECKs and
// service managers, where no curl is at hand), `contextd sessions` (GET
// /v1/sessions, printed as a table) and `contextd stop` (GET /healthz
// before the signal).
package client

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/dustin/go-humanize"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"contextd/coordinator"
)

// TokenHeader is the header carrying the token (api.TokenHeader).
const TokenHeader = "X-Contextd-Token"

// BaseURL turns a listen address (--addr, host:port) into the URL a local
// client calls: an unspecified host (0.0.0.0, ::, "") becomes 127.0.0.1,
// so `contextd healthcheck` inside a container reaches a server bound to
// 0.0.0.0.
func BaseURL(addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("--addr %q: %w; write host:port such as 127.0.0.1:7467", addr, err)
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port), nil
}

// Health calls GET /healthz at ep with hc (ep.OneConnection()) and
// returns nil when it answers 200 with {"status":"ok"}; otherwise an
// error saying what answered.
func Health(ctx context.Context, hc *http.Client, ep Endpoint) error {
	resp, err := ep.get(ctx, hc, "/healthz", "")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var body struct {
		Status string `json:"status"`
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK || json.Unmarshal(b, &body) != nil || body.Status != "ok" {
		return fmt.Errorf("contextd at %s answered /healthz with %s: %.200s", ep.Label, resp.Status, b)
	}
	return nil
}

// ReadToken reads the token file (<state-dir>/token).
func ReadToken(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("read the token: %w; pass the --state-dir of the running contextd", err)
	}
	return strings.TrimSpace(string(b)), nil
}

// Sessions calls GET /v1/sessions at ep with the token and returns the
// rows. hc is the client Prove used when ep.NeedsProof(). Errors: no
// answer, or a non-200 answer with contextd's problem detail (a 401 names
// the token file contextd reads).
func Sessions(ctx context.Context, hc *http.Client, ep Endpoint, token string) ([]coordinator.SessionSummary, error) {
	resp, err := ep.get(ctx, hc, "/v1/sessions", token)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		var p struct {
			Detail string `json:"detail"`
		}
		_ = json.Unmarshal(b, &p)
		return nil, fmt.Errorf("GET /v1/sessions: %s: %s", resp.Status, p.Detail)
	}
	var out struct {
		Sessions []coordinator.SessionSummary `json:"sessions"`
	}
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("GET /v1/sessions: %w", err)
	}
	return out.Sessions, nil
}

// WriteSessionsTable prints one line per session: the file relative to
// the directory all files share, the header version, the mode ("local*":
// registered; otherwise the server's default), the entry count (or "not
// indexed" and the file's size, for a session listed from its header: GET
// /v1/sessions indexes nothing), then what
// is worth a look: valid archives, skipped lines by reason and their line
// numbers, invalid archives (with the first reason) and the file's state
// when it is not ok; a registered session whose file Pi has not written
// yet shows AwaitingFileNote in place of its version and entries. When a
// row is registered, a last line says what the
// "*" means, so the table reads without docs/operations.md.
func WriteSessionsTable(w io.Writer, rows []coordinator.SessionSummary) error {
	files := make([]string, len(rows))
	for i, r := range rows {
		files[i] = r.File
	}
	root := commonDir(files)
	width := 0
	for i := range files {
		if rel, err := filepath.Rel(root, files[i]); err == nil && root != "" {
			files[i] = rel
		}
		width = max(width, len(files[i]))
	}
	for i, r := range rows {
		mode := string(r.Mode)
		if r.Registered {
			mode += "*"
		}
		line := fmt.Sprintf("%-*s  v%d  %-7s %5d entries", width, files[i], r.Version, mode, r.Entries)
		var notes []string
		awaiting := r.State == coordinator.StateAwaitingFile
		if awaiting {
			// Registered by /new (or a first start) before its first
			// message: no header yet, so no version and no entries to show.
			line = fmt.Sprintf("%-*s  %2s  %-7s %s", width, files[i], "", mode, AwaitingFileNote)
		} else if !r.Indexed {
			// Listed from its header: no entry count until it is used.
			line = fmt.Sprintf("%-*s  v%d  %-7s %13s", width, files[i], r.Version, mode, "not indexed")
			notes = append(notes, humanize.IBytes(uint64(max(r.FileBytes, 0))))
		}
		if r.Archives == 1 {
			notes = append(notes, "1 archive")
		} else if r.Archives > 1 {
			notes = append(notes, fmt.Sprintf("%d archives", r.Archives))
		}
		if len(r.Skipped) > 0 {
			b, _ := json.Marshal(r.Skipped) // keys sorted
			notes = append(notes, "skipped "+string(b))
		}
		var lines []string
		var invalid []coordinator.SessionProblem
		for _, p := range r.Problems {
			switch {
			case p.Line > 0:
				lines = append(lines, fmt.Sprint(p.Line))
			case p.Reason == "invalid_archive":
				invalid = append(invalid, p)
			case awaiting && p.Reason == "missing":
				// said by AwaitingFileNote
			default:
				notes = append(notes, strings.TrimSpace(p.Reason+" "+p.Detail))
			}
		}
		if len(lines) == 1 {
			notes = append(notes, "problem line "+lines[0])
		} else if len(lines) > 1 {
			notes = append(notes, "problem lines "+strings.Join(lines, ", "))
		}
		if len(invalid) > 0 {
			notes = append(notes, fmt.Sprintf("%d invalid_archive problems (e.g. %q)", len(invalid), invalid[0].Detail))
		}
		if len(notes) > 0 {
			line += "  " + strings.Join(notes, ", ")
		}
		if _, err := fmt.Fprintln(w, line); err != nil {
			return err
		}
	}
	if slices.ContainsFunc(rows, func(r coordinator.SessionSummary) bool { return r.Registered }) {
		if _, err := fmt.Fprintln(w, RegisteredLegend); err != nil {
			return err
		}
	}
	return nil
}

// AwaitingFileNote stands for the version and entry count of a
// registered session whose file Pi has not written yet (state
// awaiting_file): Pi writes the file at the session's first message
// (docs/operations.md; store/sync.go).
const AwaitingFileNote = "no file yet (Pi writes it at the session's first message)"

// RegisteredLegend is the last line of WriteSessionsTable when a row's
// mode carries "*".
const RegisteredLegend = "* = mode registered by a Pi session; without *: contextd's default mode (serve --default-mode)"

// commonDir is the deepest directory holding every path ("" for none).
func commonDir(paths []string) string {
	if len(paths) == 0 {
		return ""
	}
	dir := filepath.Dir(paths[0])
	for _, p := range paths[1:] {
		for dir != "/" && dir != "." && !strings.HasPrefix(p, dir+string(filepath.Separator)) {
			dir = filepath.Dir(dir)
		}
	}
	return dir
}
