package store

import (
	"encoding/json"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// parseValid decodes the JSON text b, valid UTF-8 that json.Valid
// accepts, as encoding/json decodes into an any with UseNumber: objects as
// map[string]any (a repeated key keeps its last value), arrays as []any,
// numbers as json.Number, a lone surrogate escape as U+FFFD. It works on
// b in place: each string is allocated once, at its size, where a
// json.Decoder copies the whole input into a buffer it grows by doubling
// and unquotes every string through a second copy.
func parseValid(b []byte) any {
	p := parser{b: b}
	return p.value()
}

type parser struct {
	b []byte
	i int
}

func (p *parser) ws() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *parser) value() any {
	p.ws()
	switch c := p.b[p.i]; c {
	case '{':
		p.i++
		m := map[string]any{}
		p.ws()
		if p.b[p.i] == '}' {
			p.i++
			return m
		}
		for {
			p.ws()
			k := p.str()
			p.ws()
			p.i++ // ':'
			m[k] = p.value()
			p.ws()
			c := p.b[p.i]
			p.i++
			if c == '}' {
				return m
			}
		}
	case '[':
		p.i++
		a := []any{}
		p.ws()
		if p.b[p.i] == ']' {
			p.i++
			return a
		}
		for {
			a = append(a, p.value())
			p.ws()
			c := p.b[p.i]
			p.i++
			if c == ']' {
				return a
			}
		}
	case '"':
		return p.str()
	case 't':
		p.i += 4
		return true
	case 'f':
		p.i += 5
		return false
	case 'n':
		p.i += 4
		return nil
	default:
		start := p.i
	number:
		for p.i < len(p.b) {
			switch c := p.b[p.i]; {
			case c >= '0' && c <= '9', c == '-', c == '+', c == '.', c == 'e', c == 'E':
				p.i++
			default:
				break number
			}
		}
		return json.Number(p.b[start:p.i])
	}
}

// str reads the string at p.i (its opening quote).
func (p *parser) str() string {
	p.i++
	start := p.i
	for p.i < len(p.b) && p.b[p.i] != '"' && p.b[p.i] != '\\' {
		p.i++
	}
	if p.b[p.i] == '"' { // no escapes: one copy
		s := string(p.b[start:p.i])
		p.i++
		return s
	}
	// Measure, then unquote into a builder of that size.
	end := p.i
	for p.b[end] != '"' {
		if p.b[end] == '\\' {
			end++
		}
		end++
	}
	var out strings.Builder
	out.Grow(end - start)
	p.i = start
	for p.i < end {
		run := p.i
		for p.i < end && p.b[p.i] != '\\' {
			p.i++
		}
		out.Write(p.b[run:p.i])
		if p.i == end {
			break
		}
		p.i++ // the backslash
		switch e := p.b[p.i]; e {
		case 'b':
			out.WriteByte('\b')
		case 'f':
			out.WriteByte('\f')
		case 'n':
			out.WriteByte('\n')
		case 'r':
			out.WriteByte('\r')
		case 't':
			out.WriteByte('\t')
		case 'u':
			r := hex4(p.b[p.i+1:])
			p.i += 4
			if utf16.IsSurrogate(r) {
				r2 := rune(-1)
				if p.i+6 < end && p.b[p.i+1] == '\\' && p.b[p.i+2] == 'u' {
					r2 = hex4(p.b[p.i+3:])
				}
				if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
					p.i += 6
					r = dec
				} else {
					r = utf8.RuneError
				}
			}
			out.WriteRune(r)
		default: // " \ /
			out.WriteByte(e)
		}
		p.i++
	}
	p.i = end + 1
	return out.String()
}

func hex4(b []byte) rune {
	var r rune
	for _, c := range b[:4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		default:
			r = r<<4 | rune(c-'A'+10)
		}
	}
	return r
}
