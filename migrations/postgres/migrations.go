// Package postgres holds the goose SQL migrations of the PostgreSQL
// backend (package bitemporal/postgres), embedded so the binary carries
// them. The SQLite backend's migrations are the files of package
// migrations, one folder up; each dialect has its own numbered series.
package postgres

import "embed"

// FS holds the migration files, flat, named NNNNN_name.sql.
//
//go:embed *.sql
var FS embed.FS
