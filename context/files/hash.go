package files

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// hashFile streams p through SHA-256, for files too large to read whole.
func hashFile(p string) (string, error) {
	f, err := os.Open(filepath.FromSlash(p))
	if err != nil {
		return "", fmt.Errorf("files: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("files: hashing %s: %w", p, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
