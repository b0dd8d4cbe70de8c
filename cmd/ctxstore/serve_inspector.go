package main

import (
	"log/slog"
	"net/http"

	"github.com/ctxstore/ctxstore/server/httpapi"
	"github.com/ctxstore/ctxstore/server/inspector"
	"github.com/ctxstore/ctxstore/store"
)

// inspectorPrefix is where serve mounts the web inspector.
const inspectorPrefix = "/inspect"

// mountInspector mounts the read-only web inspector on the API server,
// under the API's token rules.
func mountInspector(srv *httpapi.Server, st store.Store, log *slog.Logger) error {
	h, err := inspector.New(inspector.Options{
		Store:  st,
		Prefix: inspectorPrefix,
		Log:    log,
		Authorize: func(r *http.Request) (inspector.Grant, error) {
			g, err := srv.Authorize(r)
			return inspector.Grant{All: g.All, Sessions: g.Sessions}, err
		},
	})
	if err != nil {
		return err
	}
	srv.Mount(inspectorPrefix+"/", h)
	return nil
}

// logLevel maps --log-level to a slog level.
func logLevel(s string) slog.Level {
	switch s {
	case "debug":
		return slog.LevelDebug
	case "warn":
		return slog.LevelWarn
	case "error":
		return slog.LevelError
	}
	return slog.LevelInfo
}
