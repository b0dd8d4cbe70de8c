// Package migrations holds the goose SQL migrations of the embedded SQLite
// backend (package bitemporal), embedded so the binary carries them.
package migrations

import "embed"

// FS holds the migration files, flat, named NNNNN_name.sql.
//
//go:embed *.sql
var FS embed.FS
