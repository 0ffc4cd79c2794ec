package contextd

import "testing"

// TestModeNamesAreExact: a mode is read exactly as Modes spells it
// (lowercase); another case is refused with advice naming the lowercase
// mode, anything else with the list (the rule every reader of a mode
// follows: ParseMode, --default-mode, the extension's settings and
// /contextd mode through internal/sharedrules).
func TestModeNamesAreExact(t *testing.T) {
	for _, c := range []struct {
		in     string
		ok     bool
		advice string
	}{
		{"tree", true, ""},
		{"off", true, ""},
		{"TREE", false, "use tree (mode names are lowercase)"},
		{"Remote", false, "use remote (mode names are lowercase)"},
		{"weird", false, "use off, local, tree or remote"},
		{"", false, "use off, local, tree or remote"},
	} {
		m, err := ParseMode(c.in)
		if c.ok != (err == nil) || c.ok && string(m) != c.in {
			t.Errorf("ParseMode(%q) = %q, %v", c.in, m, err)
		}
		if got := ModeAdvice(c.in); got != c.advice {
			t.Errorf("ModeAdvice(%q) = %q, want %q", c.in, got, c.advice)
		}
		if !c.ok && err.Error() != `"`+c.in+`" is not a mode; `+c.advice {
			t.Errorf("ParseMode(%q) error %q", c.in, err)
		}
	}
}
