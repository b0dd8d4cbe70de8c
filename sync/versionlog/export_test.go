package versionlog

import "io"

// Verify reads the whole log in r and checks it, without acting on it. It
// returns the header and trailer, or the first fault.
func Verify(r io.Reader) (Header, Trailer, error) {
	rd, err := NewReader(r)
	if err != nil {
		return Header{}, Trailer{}, err
	}
	for {
		tx, err := rd.Next()
		if err == io.EOF {
			t, _ := rd.Trailer()
			return rd.Header(), t, nil
		} else if err != nil {
			return rd.Header(), Trailer{}, err
		}
		if err := checkOps(tx); err != nil {
			return rd.Header(), Trailer{}, err
		}
	}
}
