// Package contacts reads the contact lists a spreadsheet exports.
package contacts

import (
	"errors"
	"strings"
)

// ErrOpenQuote is returned for a line whose quoted field does not end.
var ErrOpenQuote = errors.New("contacts: a quoted field does not end")

// SplitLine splits one line of a comma-separated export into its fields. A
// field that starts with a double quote runs to the next lone quote and may
// hold commas; a doubled quote inside it stands for one quote. A quote
// elsewhere in a field is kept as it is.
func SplitLine(line string) ([]string, error) {
	var out []string
	for {
		if !strings.HasPrefix(line, `"`) {
			f, rest, more := strings.Cut(line, ",")
			out = append(out, f)
			if !more {
				return out, nil
			}
			line = rest
			continue
		}
		var b strings.Builder
		i := 1
		for {
			j := strings.IndexByte(line[i:], '"')
			if j < 0 {
				return nil, ErrOpenQuote
			}
			b.WriteString(line[i : i+j])
			i += j + 1
			if i < len(line) && line[i] == '"' {
				b.WriteByte('"')
				i++
				continue
			}
			break
		}
		out = append(out, b.String())
		if i >= len(line) {
			return out, nil
		}
		if line[i] != ',' {
			return nil, errors.New("contacts: text after a closing quote")
		}
		line = line[i+1:]
	}
}

// Contact is one row of the export: name, e-mail, phone.
type Contact struct{ Name, Email, Phone string }

// ParseContact reads a row of three fields.
func ParseContact(line string) (Contact, error) {
	f, err := SplitLine(line)
	if err != nil {
		return Contact{}, err
	}
	if len(f) != 3 {
		return Contact{}, errors.New("contacts: want 3 fields")
	}
	return Contact{Name: f[0], Email: f[1], Phone: f[2]}, nil
}
