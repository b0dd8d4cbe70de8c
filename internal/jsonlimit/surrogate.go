package jsonlimit

// LoneSurrogate returns the byte offset of the first \uXXXX escape in the
// JSON text b that names half of a UTF-16 surrogate pair without its other
// half (\ud800 alone, \udfff alone, a high half not followed by a low
// one), and -1 if there is none. Such an escape is no Unicode character:
// encoding/json decodes it as U+FFFD, so "k\ud800" and "k\udfff" would
// become the same string. Like Depth it scans bytes only (escapes outside
// strings are not looked for) and does not validate the JSON.
func LoneSurrogate(b []byte) int {
	in := false
	for i := 0; i < len(b); i++ {
		c := b[i]
		if !in {
			if c == '"' {
				in = true
			}
			continue
		}
		switch c {
		case '"':
			in = false
		case '\\':
			if i+1 < len(b) && b[i+1] == 'u' {
				r, ok := hex4(b, i+2)
				switch {
				case !ok:
				case r >= 0xD800 && r <= 0xDBFF:
					if i+11 < len(b) && b[i+6] == '\\' && b[i+7] == 'u' {
						if lo, ok := hex4(b, i+8); ok && lo >= 0xDC00 && lo <= 0xDFFF {
							i += 11 // the pair
							continue
						}
					}
					return i
				case r >= 0xDC00 && r <= 0xDFFF:
					return i
				}
				i += 5
				continue
			}
			i++ // the escaped byte
		}
	}
	return -1
}

// hex4 reads four hex digits of b at i.
func hex4(b []byte, i int) (rune, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}
