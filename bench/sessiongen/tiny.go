package sessiongen

import (
	"bytes"
	"fmt"
)

// TinyChain is a Pi v3 session file of n tiny user messages ("x") on one
// parentId chain, ids the 8-hex numbers 1..n, header id sid: the shape of
// docs/security.md's many-tiny-entries row (many entries, little text).
// About 100 bytes per entry.
func TinyChain(sid string, n int) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, `{"type":"session","version":3,"id":%q,"timestamp":"2026-01-01T00:00:00.000Z","cwd":"/tmp"}`+"\n", sid)
	for i := 1; i <= n; i++ {
		parent := "null"
		if i > 1 {
			parent = fmt.Sprintf(`"%08x"`, i-1)
		}
		fmt.Fprintf(&b, `{"type":"message","id":"%08x","parentId":%s,"message":{"role":"user","content":"x"}}`+"\n", i, parent)
	}
	return b.Bytes()
}
