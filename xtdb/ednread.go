package xtdb

import (
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"olympos.io/encoding/edn"
)

// readEDN parses one EDN value: the subset XTDB answers with (nil,
// booleans, numbers, strings, keywords, symbols, lists, vectors, maps, sets,
// #inst, #uuid and other tags). It yields the types olympos.io/encoding/edn
// yields (edn.Keyword, edn.Symbol, edn.Tag, map[any]any, []any, int64,
// float64, *big.Int, string, bool, nil, time.Time), about ten times faster,
// which matters for every read of the driver. FuzzReadEDN checks it
// against that library. White space is ASCII only, as XTDB writes it.
// The library also skips Go's Unicode spaces (U+0085, U+00A0, U+2000, ...),
// of which Clojure's reader (Java's Character.isWhitespace) takes only
// some, not U+0085 or U+00A0; readEDN reads them as part of a token, and
// the fuzz test leaves such inputs out.
func readEDN(data []byte) (any, error) {
	p := &ednParser{s: data}
	v, err := p.value()
	if err != nil {
		return nil, err
	}
	p.skip()
	if p.i != len(p.s) {
		return nil, p.errf("data after the value")
	}
	return v, nil
}

type ednParser struct {
	s []byte
	i int
}

func (p *ednParser) errf(format string, args ...any) error {
	return fmt.Errorf("EDN at byte %d: %s", p.i, fmt.Sprintf(format, args...))
}

// skip passes over white space, commas and comments.
func (p *ednParser) skip() {
	for p.i < len(p.s) {
		switch c := p.s[p.i]; {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == ',' || c == '\f' || c == '\v':
			p.i++
		case c == ';':
			for p.i < len(p.s) && p.s[p.i] != '\n' {
				p.i++
			}
		default:
			return
		}
	}
}

func isDelim(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == ',' || c == '\f' || c == '\v' ||
		c == '(' || c == ')' || c == '[' || c == ']' || c == '{' || c == '}' || c == '"' || c == ';' || c == '\\'
}

// token reads a run of non-delimiter bytes.
func (p *ednParser) token() string {
	start := p.i
	for p.i < len(p.s) && !isDelim(p.s[p.i]) {
		p.i++
	}
	return string(p.s[start:p.i])
}

func (p *ednParser) value() (any, error) {
	p.skip()
	if p.i >= len(p.s) {
		return nil, p.errf("unexpected end")
	}
	switch c := p.s[p.i]; c {
	case '"':
		return p.str()
	case '[':
		p.i++
		return p.seq(']')
	case '(':
		p.i++
		return p.seq(')')
	case '{':
		p.i++
		return p.mapping()
	case ':':
		p.i++
		t := p.token()
		if t == "" {
			return nil, p.errf("empty keyword")
		}
		return edn.Keyword(t), nil
	case '#':
		return p.dispatch()
	case ')', ']', '}':
		return nil, p.errf("unexpected %q", c)
	case '\\':
		return nil, p.errf("characters are not supported")
	}
	t := p.token()
	switch t {
	case "nil":
		return nil, nil
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	if c := t[0]; c >= '0' && c <= '9' || (len(t) > 1 && (c == '-' || c == '+') && t[1] >= '0' && t[1] <= '9') {
		return number(t)
	}
	return edn.Symbol(t), nil
}

func number(t string) (any, error) {
	if strings.HasSuffix(t, "N") {
		n, ok := new(big.Int).SetString(strings.TrimPrefix(t[:len(t)-1], "+"), 10)
		if !ok {
			return nil, fmt.Errorf("EDN: bad integer %q", t)
		}
		return n, nil
	}
	if strings.HasSuffix(t, "M") {
		// 192 bits, rounding to nearest even, as the EDN library reads a
		// BigDecimal (edn.GlobalMathContext): at SetString's default of 64
		// bits a 28-digit integer already rounds.
		f, ok := new(big.Float).SetPrec(192).SetMode(big.ToNearestEven).SetString(t[:len(t)-1])
		if !ok {
			return nil, fmt.Errorf("EDN: bad decimal %q", t)
		}
		return f, nil
	}
	if !strings.ContainsAny(t, ".eE") {
		if n, err := strconv.ParseInt(t, 10, 64); err == nil {
			return n, nil
		}
		if n, ok := new(big.Int).SetString(strings.TrimPrefix(t, "+"), 10); ok {
			return n, nil
		}
		return nil, fmt.Errorf("EDN: bad integer %q", t)
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil {
		return nil, fmt.Errorf("EDN: bad number %q", t)
	}
	return f, nil
}

func (p *ednParser) str() (string, error) {
	p.i++ // opening quote
	var b strings.Builder
	start := p.i
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch c {
		case '"':
			b.Write(p.s[start:p.i])
			p.i++
			out := b.String()
			if !utf8.ValidString(out) {
				return "", p.errf("string is not valid UTF-8")
			}
			return out, nil
		case '\\':
			b.Write(p.s[start:p.i])
			p.i++
			if p.i >= len(p.s) {
				return "", p.errf("unterminated escape")
			}
			switch e := p.s[p.i]; e {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case 'r':
				b.WriteByte('\r')
			case 'b':
				b.WriteByte('\b')
			case 'f':
				b.WriteByte('\f')
			case '"', '\\':
				b.WriteByte(e)
			case 'u':
				if p.i+4 >= len(p.s) {
					return "", p.errf("short \\u escape")
				}
				r, err := strconv.ParseUint(string(p.s[p.i+1:p.i+5]), 16, 32)
				if err != nil {
					return "", p.errf("bad \\u escape")
				}
				p.i += 4
				rr := rune(r)
				if rr >= 0xD800 && rr < 0xDC00 && p.i+6 < len(p.s) && p.s[p.i+1] == '\\' && p.s[p.i+2] == 'u' {
					if lo, err := strconv.ParseUint(string(p.s[p.i+3:p.i+7]), 16, 32); err == nil && lo >= 0xDC00 && lo < 0xE000 {
						rr = (rr-0xD800)<<10 + (rune(lo) - 0xDC00) + 0x10000
						p.i += 6
					}
				}
				if rr >= 0xD800 && rr < 0xE000 {
					rr = utf8.RuneError
				}
				b.WriteRune(rr)
			default:
				return "", p.errf("unknown escape \\%c", e)
			}
			p.i++
			start = p.i
		default:
			p.i++
		}
	}
	return "", p.errf("unterminated string")
}

func (p *ednParser) seq(end byte) ([]any, error) {
	out := []any{}
	for {
		p.skip()
		if p.i >= len(p.s) {
			return nil, p.errf("unterminated collection")
		}
		if p.s[p.i] == end {
			p.i++
			return out, nil
		}
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
}

func (p *ednParser) mapping() (map[any]any, error) {
	out := map[any]any{}
	for {
		p.skip()
		if p.i >= len(p.s) {
			return nil, p.errf("unterminated map")
		}
		if p.s[p.i] == '}' {
			p.i++
			return out, nil
		}
		k, err := p.value()
		if err != nil {
			return nil, err
		}
		if !hashable(k) {
			return nil, p.errf("a collection as a map key is not supported")
		}
		if _, dup := out[k]; dup {
			return nil, p.errf("duplicate key %s in a map", ednKey(k))
		}
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		out[k] = v
	}
}

// dispatch reads what follows '#': a set, a discard or a tagged value.
func (p *ednParser) dispatch() (any, error) {
	p.i++
	if p.i >= len(p.s) {
		return nil, p.errf("unexpected end after #")
	}
	switch p.s[p.i] {
	case '{':
		p.i++
		at := p.i
		elems, err := p.seq('}')
		if err != nil {
			return nil, err
		}
		// EDN sets hold unique values; Clojure's reader (so XTDB's) refuses
		// #{0 0}, and so does this one.
		seen := make(map[string]bool, len(elems))
		for _, e := range elems {
			k := ednKey(e)
			if seen[k] {
				p.i = at
				return nil, p.errf("duplicate element %s in a set", k)
			}
			seen[k] = true
		}
		return elems, nil
	case '_':
		p.i++
		if _, err := p.value(); err != nil {
			return nil, err
		}
		return p.value()
	}
	tag := p.token()
	if tag == "" {
		return nil, p.errf("empty tag")
	}
	v, err := p.value()
	if err != nil {
		return nil, err
	}
	switch tag {
	case "inst":
		s, ok := v.(string)
		if !ok {
			return nil, p.errf("#inst of %T", v)
		}
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return nil, p.errf("#inst %q: %v", s, err)
		}
		return t, nil
	case "uuid":
		if s, ok := v.(string); ok {
			return s, nil
		}
	}
	return edn.Tag{Tagname: tag, Value: v}, nil
}

// ednKey renders a read value so that equal EDN values (big numbers
// included) render alike: for finding duplicates.
func ednKey(v any) string {
	switch x := v.(type) {
	case *big.Int:
		return "bigint " + x.String()
	case *big.Float:
		return "bigdec " + x.Text('g', -1)
	case edn.Tag:
		return "#" + string(x.Tagname) + " " + ednKey(x.Value)
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = ednKey(e)
		}
		return "[" + strings.Join(parts, " ") + "]"
	}
	return fmt.Sprintf("%T %#v", v, v)
}

// hashable reports whether v can be a Go map key.
func hashable(v any) bool {
	switch x := v.(type) {
	case []any, map[any]any:
		return false
	case edn.Tag:
		return hashable(x.Value)
	}
	return true
}
