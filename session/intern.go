package session

import (
	"strings"
	"sync"
)

// Entry types, roles, stop reasons and custom types come from a small
// vocabulary but are decoded once per entry; interning them keeps one copy
// of each in memory (the in-memory tree of a 1 GB session holds ~250k
// entries).
var internTab = struct {
	sync.RWMutex
	m map[string]string
}{m: map[string]string{}}

// maxInterned bounds the intern table; later new strings are kept as is.
const maxInterned = 4096

// Intern returns a canonical copy of s for short, repeated strings (at most
// 64 bytes); the result never shares s's bytes (s may alias a buffer that
// is reused: Parser.Scratch). Safe for concurrent use.
func Intern(s string) string {
	if len(s) == 0 {
		return ""
	}
	if len(s) > 64 {
		return strings.Clone(s)
	}
	internTab.RLock()
	c, ok := internTab.m[s]
	internTab.RUnlock()
	if ok {
		return c
	}
	internTab.Lock()
	defer internTab.Unlock()
	if c, ok := internTab.m[s]; ok {
		return c
	}
	c = strings.Clone(s)
	if len(internTab.m) < maxInterned {
		internTab.m[c] = c
	}
	return c
}
