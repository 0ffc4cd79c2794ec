package client

// How `contextd sessions` makes sure it talks to its own contextd before
// it sends the token, as the extension does (docs/security.md "The Pi
// extension talks only to its own contextd"; extension/src/transport.ts):
// the discovery file and the state directory must be the user's and
// writable by nobody else, the token file readable and writable by nobody
// else, and the listener must prove on the very connection the token
// then travels on that it holds the token (GET /v1/proof, api.Proof),
// unless the connection is a Unix socket CheckSocket trusts
// (Endpoint.NeedsProof says why none is needed there).

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"syscall"

	"contextd/api"
)

// errSecondConnection is the dial error of a OneConnection client asked
// for a second connection: the proven one was closed.
var errSecondConnection = errors.New("the proven connection to contextd was closed; retry")

// Prove sends GET /v1/proof to ep with a fresh 32-byte challenge (64 hex
// digits) and returns nil when the answer is 200 with {"proof":
// api.Proof(token, challenge)}. Otherwise the error says, in one sentence,
// that the listener is not the contextd of tokenFile and nothing was sent.
// hc is ep.OneConnection(), so the request that carries the token next
// travels on the proven connection.
func Prove(ctx context.Context, hc *http.Client, ep Endpoint, token, tokenFile string) error {
	var c [32]byte
	if _, err := rand.Read(c[:]); err != nil {
		return err
	}
	challenge := hex.EncodeToString(c[:])
	resp, err := ep.get(ctx, hc, api.ProofPath+"?challenge="+challenge, "")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	var body struct {
		Proof string `json:"proof"`
	}
	_ = json.Unmarshal(b, &body)
	if resp.StatusCode != http.StatusOK || !hmac.Equal([]byte(body.Proof), []byte(api.Proof(token, challenge))) {
		return fmt.Errorf("the server at %s did not prove it holds the token of %s (%s), so the token was not sent: it is another program, an older contextd or a contextd with another state directory; start contextd (`contextd serve`) for this state directory or pass --state-dir of the running one", ep.Label, tokenFile, resp.Status)
	}
	return nil
}

// CheckDiscovery returns nil when stateDir and its discovery file (Path)
// may be trusted: both belong to this user and nobody else may write them
// (mode & 0o022 == 0), the state directory is a directory and the file a
// regular file (not a symbolic link). A missing file is fs.ErrNotExist.
// Otherwise the error is one sentence saying what to do.
func CheckDiscovery(stateDir, file string) error {
	st, err := os.Lstat(file)
	if err != nil {
		return err
	}
	dst, err := os.Lstat(stateDir)
	if err != nil {
		return err
	}
	why := "it is not a directory"
	if dst.IsDir() {
		why = notPrivate(dst, 0o022)
	}
	if why != "" {
		return fmt.Errorf("the contextd state directory %s cannot be trusted: %s, so another user could redirect contextd sessions; `chmod 700 %s` if it is yours, else pass a --state-dir of your own", stateDir, why, stateDir)
	}
	why = "it is not a regular file"
	if st.Mode().IsRegular() {
		why = notPrivate(st, 0o022)
	}
	if why != "" {
		return fmt.Errorf("the discovery file %s cannot be trusted: %s; stop contextd, delete the file and start contextd again", file, why)
	}
	return nil
}

// CheckTokenFile returns nil when the token file belongs to this user and
// nobody else may read or write it (mode & 0o077 == 0), as the extension
// requires; otherwise one sentence saying what to do.
func CheckTokenFile(file string) error {
	st, err := os.Stat(file)
	if err != nil {
		return err
	}
	if why := notPrivate(st, 0o077); why != "" {
		return fmt.Errorf("the contextd token file %s cannot be trusted: %s; `chmod 600 %s` if it is yours, else delete it and restart contextd", file, why, file)
	}
	return nil
}

// notPrivate says why st may not be trusted ("" when it may): it belongs
// to another uid (where the platform reports owners), or its mode has a
// bit of forbidden set.
func notPrivate(st fs.FileInfo, forbidden fs.FileMode) string {
	if sys, ok := st.Sys().(*syscall.Stat_t); ok && int(sys.Uid) != os.Getuid() {
		return fmt.Sprintf("it belongs to uid %d, not to you (uid %d)", sys.Uid, os.Getuid())
	}
	if st.Mode().Perm()&forbidden != 0 {
		return fmt.Sprintf("others may %s it (mode %04o)", map[bool]string{true: "read or write", false: "write"}[forbidden == 0o077], st.Mode().Perm())
	}
	return ""
}
