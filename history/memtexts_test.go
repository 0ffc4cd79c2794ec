package history

import (
	"fmt"
	"strings"
)

// MemTexts is an in-memory TextSource: item text by ItemRef.Key. The tests
// use it; a ref whose Key is missing is an error.
type MemTexts map[int64]string

func (m MemTexts) text(ref ItemRef) (string, error) {
	s, ok := m[ref.Key]
	if !ok {
		return "", fmt.Errorf("history: no text for item %q (key %d)", ref.ItemID, ref.Key)
	}
	return s, nil
}

// Prefix implements TextSource.
func (m MemTexts) Prefix(ref ItemRef, maxChars int) (string, error) {
	s, err := m.text(ref)
	if err != nil {
		return "", err
	}
	return SliceChars(s, 0, maxChars), nil
}

// Slice implements TextSource.
func (m MemTexts) Slice(ref ItemRef, offsetChars, limitChars int) (string, error) {
	s, err := m.text(ref)
	if err != nil {
		return "", err
	}
	return SliceChars(s, offsetChars, limitChars), nil
}

// Search implements TextSource with strings.Contains.
func (m MemTexts) Search(query string, refs ItemList, limit int, fn func(ref ItemRef) bool) error {
	n := 0
	for i := 0; i < refs.Len(); i++ {
		ref := refs.At(i)
		s, err := m.text(ref)
		if err != nil {
			return err
		}
		if !strings.Contains(s, query) {
			continue
		}
		n++
		if !fn(ref) || (limit > 0 && n >= limit) {
			return nil
		}
	}
	return nil
}
