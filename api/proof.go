package api

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
)

// ProofPath is the route through which contextd proves it holds the token
// before a client sends it anything secret (docs/security.md "The extension
// talks only to its own contextd"). It needs no token and reveals nothing
// but the proof: GET /v1/proof?challenge=HEX answers
// {"proof": hex(HMAC-SHA256(token, ProofContext + HEX))}.
//
// The challenge is 32 to 128 hexadecimal digits (16 to 64 random bytes),
// chosen by the client for each connection; anything else answers 400.
// A listener that does not hold the token (another user's process bound
// to a port contextd left, or to the default port) cannot answer it, so
// the client refuses it before sending the token, a session path or Codex
// credentials. The rule is shared with the extension's
// extension/src/transport.ts (PROOF_PATH, PROOF_CONTEXT).
const ProofPath = "/v1/proof"

// ProofContext prefixes the challenge in the HMAC, so that a proof is
// good for this exchange only.
const ProofContext = "contextd-proof-v1:"

// Proof returns hex(HMAC-SHA256(token, ProofContext + challenge)).
func Proof(token, challenge string) string {
	m := hmac.New(sha256.New, []byte(token))
	m.Write([]byte(ProofContext + challenge))
	return hex.EncodeToString(m.Sum(nil))
}

// validChallenge reports whether c is 32 to 128 hexadecimal digits, an
// even count.
func validChallenge(c string) bool {
	if len(c) < 32 || len(c) > 128 {
		return false
	}
	_, err := hex.DecodeString(c)
	return err == nil
}

// serveProof answers GET ProofPath.
func (s *Server) serveProof(w http.ResponseWriter, r *http.Request) {
	c := r.URL.Query().Get("challenge")
	if !validChallenge(c) {
		writeProblem(w, http.StatusBadRequest, "Query parameter challenge must be 32 to 128 hexadecimal digits (an even count): random bytes the client chose.")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	b, _ := json.Marshal(map[string]string{"proof": Proof(s.cfg.Token, c)})
	w.Write(b)
}
