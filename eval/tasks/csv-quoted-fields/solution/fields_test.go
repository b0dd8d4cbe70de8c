package contacts

import (
	"errors"
	"reflect"
	"testing"
)

func TestSplitLine(t *testing.T) {
	for line, want := range map[string][]string{
		`a,b,c`:                   {"a", "b", "c"},
		`a,,c`:                    {"a", "", "c"},
		`"Doe, Jane",jd@x.org,12`: {"Doe, Jane", "jd@x.org", "12"},
		`"say ""hi""",b`:          {`say "hi"`, "b"},
		`"",x`:                    {"", "x"},
		`plain "inner" text,y`:    {`plain "inner" text`, "y"},
	} {
		got, err := SplitLine(line)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("SplitLine(%q) = %q, %v; want %q", line, got, err, want)
		}
	}
	if _, err := SplitLine(`"open,b`); !errors.Is(err, ErrOpenQuote) {
		t.Errorf("an unterminated quote: %v, want ErrOpenQuote", err)
	}
}

func TestParseContact(t *testing.T) {
	c, err := ParseContact(`"Doe, Jane",jane.doe@example.org,+44 20 7946 0018`)
	if err != nil || c.Name != "Doe, Jane" || c.Email != "jane.doe@example.org" {
		t.Errorf("ParseContact: %+v, %v", c, err)
	}
}
