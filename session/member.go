package session

// StringMember returns the string value of key in the JSON object raw, as
// JavaScript reads obj[key] after JSON.parse: keys match case-sensitively
// (escapes decoded), a repeated key's last value wins, and the value is
// decoded with the decoder's string rules (invalid UTF-8 and lone
// surrogate escapes become U+FFFD, as encoding/json decodes them). ok is
// false when raw is not one JSON object or the value is absent or not a
// string. A flat router call's action (history.routerAction) is read so,
// from arguments the line's decoder already validated: encoding/json
// validated and decoded all of them again, and matched keys without case.
func StringMember(raw []byte, key string) (v string, ok bool) {
	d := decoder{b: raw}
	err := d.object(0, func(k []byte) error {
		if string(k) != key {
			_, err := d.skip()
			return err
		}
		s, isStr, err := d.optStr()
		v, ok = s, isStr
		return err
	})
	if err != nil || d.end() != nil {
		return "", false
	}
	return v, ok
}
