package api

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"strings"
)

// MinTokenBits is the least estimated strength of a token file's token:
// its length times the Shannon entropy of its characters, in bits. The
// token contextd makes (64 random hex digits) scores about 240; 32 random
// hex digits about 118; 32 × "a" scores 0.
const MinTokenBits = 100

// LoadToken returns the service token kept in the file path, creating the
// file on first start (256 random bits as 64 hex digits, mode 0600). The
// token is what the file holds without surrounding white space.
//
// A token file that others may read or write is refused, as is a weak
// token (docs/security.md): shorter than 32 characters, a repetition of a
// shorter string, or under MinTokenBits. Each error names the file and
// says what to do (chmod 600, or delete it to get a new one).
func LoadToken(path string) (string, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return newToken(path)
	}
	if err != nil {
		return "", err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", err
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("token file %s is not a regular file; delete it to make a new one", path)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return "", fmt.Errorf("token file %s can be read or written by other users (mode %04o); run `chmod 600 %s`, or delete it to make a new one", path, perm, path)
	}
	b, err := io.ReadAll(io.LimitReader(f, 4096))
	if err != nil {
		return "", err
	}
	t := strings.TrimSpace(string(b))
	if why := weakToken(t); why != "" {
		return "", fmt.Errorf("token file %s holds a weak token (%s); delete it to make a new one of 256 random bits, or write a random one of at least 32 characters", path, why)
	}
	return t, nil
}

// weakToken says why t is a weak token, "" when it is not.
func weakToken(t string) string {
	if len(t) < 32 {
		return fmt.Sprintf("%d characters, fewer than 32", len(t))
	}
	for p := 1; p <= len(t)/2; p++ {
		if len(t)%p == 0 && strings.Repeat(t[:p], len(t)/p) == t {
			return fmt.Sprintf("a %d-character string repeated", p)
		}
	}
	if bits := tokenBits(t); bits < MinTokenBits {
		return fmt.Sprintf("about %.0f bits, fewer than %d", bits, MinTokenBits)
	}
	return ""
}

// tokenBits is len(t) times the Shannon entropy of t's bytes.
func tokenBits(t string) float64 {
	var counts [256]int
	for i := 0; i < len(t); i++ {
		counts[t[i]]++
	}
	h := 0.0
	for _, c := range counts {
		if c > 0 {
			p := float64(c) / float64(len(t))
			h -= p * math.Log2(p)
		}
	}
	return h * float64(len(t))
}

func newToken(path string) (string, error) {
	buf := make([]byte, 32)
	if _, err := rand.Read(buf); err != nil {
		return "", err
	}
	t := hex.EncodeToString(buf)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", err
	}
	if _, err := f.WriteString(t + "\n"); err != nil {
		f.Close()
		return "", err
	}
	return t, f.Close()
}
