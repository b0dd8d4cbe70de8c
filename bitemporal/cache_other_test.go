//go:build !linux

package bitemporal_test

import "errors"

func dropFileCache(string) error {
	return errors.New("dropping a file from the page cache needs Linux")
}
