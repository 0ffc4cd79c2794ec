// Package remote is the Codex backend client of Remote mode (reference
// codex-history-notes.md §1.5-1.6, §3.7): it forwards a history or notes
// call byte for byte and never answers from local data.
package remote

import (
	"context"
	"net/http"
	"time"

	"contextd"
)

// DefaultBaseURL is the ChatGPT Codex backend base (§1.6).
const DefaultBaseURL = "https://chatgpt.com/backend-api/codex"

// Timeout is the one-attempt timeout of a backend call (§1.6: 35 s).
const Timeout = 35 * time.Second

// Client forwards calls to the Codex backend.
type Client struct {
	BaseURL string
	HTTP    *http.Client
}

// Call is one forwarded operation.
type Call struct {
	Namespace string      // history or notes
	Op        string      // operation name, e.g. list_items or thread_hint
	Body      []byte      // request body, forwarded unchanged
	Header    http.Header // caller headers; only the forwarded set is used
}

// Forward sends c to the backend once. (Implementation pending.)
func (cl *Client) Forward(ctx context.Context, c Call) ([]byte, error) {
	return nil, contextd.Errorf(contextd.EUpstream, "Unable to perform operation: Remote mode is not implemented yet.")
}

// New returns a client for base.
func New(base string, reg any, log any) *Client {
	return &Client{BaseURL: base, HTTP: &http.Client{Timeout: Timeout}}
}
