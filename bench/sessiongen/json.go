package sessiongen

import (
	"fmt"
	"sort"
	"strconv"
	"unicode/utf8"
)

// keyOrder puts object keys in the order Pi writes them (type, id,
// parentId, timestamp first; role first in messages); other keys follow in
// alphabetical order.
var keyOrder = map[string]int{}

func init() {
	for i, k := range []string{"type", "version", "customType", "id", "parentId", "timestamp", "cwd", "provider", "modelId", "thinkingLevel",
		"role", "toolCallId", "toolName", "command", "output", "exitCode", "cancelled", "truncated",
		"content", "thinking", "thinkingSignature", "text", "textSignature", "name", "arguments",
		"display", "details", "data", "message", "api", "model", "usage", "stopReason", "isError"} {
		keyOrder[k] = i + 1
	}
}

// appendJSON appends v as JSON. It knows the few types the generator uses.
func appendJSON(b []byte, v any) []byte {
	switch x := v.(type) {
	case nil:
		return append(b, "null"...)
	case string:
		return appendString(b, x)
	case bool:
		return strconv.AppendBool(b, x)
	case int:
		return strconv.AppendInt(b, int64(x), 10)
	case int64:
		return strconv.AppendInt(b, x, 10)
	case float64:
		return strconv.AppendFloat(b, x, 'g', -1, 64)
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool {
			a, c := keyOrder[keys[i]], keyOrder[keys[j]]
			if a == 0 {
				a = 1 << 20
			}
			if c == 0 {
				c = 1 << 20
			}
			if a != c {
				return a < c
			}
			return keys[i] < keys[j]
		})
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, k)
			b = append(b, ':')
			b = appendJSON(b, x[k])
		}
		return append(b, '}')
	case []map[string]any:
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSON(b, e)
		}
		return append(b, ']')
	case []any:
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSON(b, e)
		}
		return append(b, ']')
	}
	panic(fmt.Sprintf("appendJSON: unsupported %T", v))
}

const hexDigits = "0123456789abcdef"

// appendString writes s as a JSON string the way JSON.stringify does
// (only ", \\ and control characters escaped).
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			if c < utf8.RuneSelf {
				i++
				continue
			}
			_, sz := utf8.DecodeRuneInString(s[i:])
			i += sz
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\n':
			b = append(b, '\\', 'n')
		case '\t':
			b = append(b, '\\', 't')
		case '\r':
			b = append(b, '\\', 'r')
		default:
			b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		}
		i++
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
