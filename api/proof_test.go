package api

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestProofVector pins Proof to a value computed outside Go (Python's
// hmac.new(token, b"contextd-proof-v1:" + challenge, sha256).hexdigest());
// extension/test/transport.test.ts checks the same vector, so the two
// sides of the rule agree.
func TestProofVector(t *testing.T) {
	got := Proof("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", "00112233445566778899aabbccddeeff")
	if want := "750927707a3309357cd2ff10a38235fa1a12735707f5e44febd366f742b13386"; got != want {
		t.Errorf("Proof = %s, want %s", got, want)
	}
}

// TestProofRoute: GET /v1/proof needs no token and answers only the HMAC
// of the client's challenge under the token; a challenge that is not 32 to
// 128 hex digits is a 400 that echoes nothing; every other route still
// needs the token.
func TestProofRoute(t *testing.T) {
	s := newTestServer(t, serverOptions{})
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get(s.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	ch := strings.Repeat("ab", 16)
	code, body := get(ProofPath + "?challenge=" + ch)
	var p map[string]string
	if code != 200 || json.Unmarshal([]byte(body), &p) != nil || len(p) != 1 || p["proof"] != Proof(testToken, ch) {
		t.Errorf("proof: %d %s, want 200 {\"proof\": HMAC}", code, body)
	}
	for _, bad := range []string{"", "ab", strings.Repeat("ab", 65), strings.Repeat("zz", 16), strings.Repeat("a", 33)} {
		if code, body := get(ProofPath + "?challenge=" + bad); code != 400 || strings.Contains(body, "proof") || (bad != "" && strings.Contains(body, bad)) {
			t.Errorf("challenge %q: %d %s, want a 400 without a proof or the value", bad, code, body)
		}
	}
	if code, _ := get(ProofPath + "x?challenge=" + ch); code != 401 {
		t.Errorf("a path beside the proof route: %d, want 401 (token required)", code)
	}
}
