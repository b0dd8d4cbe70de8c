// Package contacts reads the contact lists a spreadsheet exports.
package contacts

import (
	"errors"
	"strings"
)

// ErrOpenQuote is returned for a line whose quoted field does not end.
var ErrOpenQuote = errors.New("contacts: a quoted field does not end")

// SplitLine splits one line of a comma-separated export into its fields.
func SplitLine(line string) ([]string, error) {
	return strings.Split(line, ","), nil
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
