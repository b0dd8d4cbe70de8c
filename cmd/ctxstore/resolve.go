package main

import (
	"reflect"

	"github.com/ctxstore/ctxstore/explain/inspect"
	"github.com/ctxstore/ctxstore/store"
)

// Ids a person may shorten. A command's string field (or []string) tagged
// ref:"session", ref:"commit" or ref:"object" takes an id or any prefix
// of one that names a single id; resolveRefs, the one place that
// resolves them, replaces each by the whole id when the command opens its
// store (app.open), before the command reads anything. An id nothing
// starts with stays as given (the command reports it not found); a prefix
// of several ids is an error listing them (inspect.AmbiguousError).
func (a *app) resolveRefs(st store.Store) error {
	if a.resolved || !a.target.IsValid() {
		return nil
	}
	a.resolved = true
	return resolveIn(a, st, a.target)
}

func resolveIn(a *app, st store.Store, v reflect.Value) error {
	for v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return nil
		}
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return nil
	}
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		f, fv := t.Field(i), v.Field(i)
		if !f.IsExported() {
			continue
		}
		if f.Anonymous {
			if err := resolveIn(a, st, fv); err != nil {
				return err
			}
			continue
		}
		kind := f.Tag.Get("ref")
		if kind == "" {
			continue
		}
		resolve := map[string]func(string) (string, error){
			"session": func(id string) (string, error) { return inspect.ResolveSession(a.ctx, st, id) },
			"commit":  func(id string) (string, error) { return inspect.ResolveCommit(a.ctx, st, id) },
			"object":  func(id string) (string, error) { return inspect.ResolveObject(a.ctx, st, id) },
		}[kind]
		if resolve == nil {
			continue
		}
		switch fv.Kind() {
		case reflect.String:
			id, err := resolve(fv.String())
			if err != nil {
				return err
			}
			fv.SetString(id)
		case reflect.Slice:
			if fv.Type().Elem().Kind() != reflect.String {
				continue
			}
			for j := 0; j < fv.Len(); j++ {
				id, err := resolve(fv.Index(j).String())
				if err != nil {
					return err
				}
				fv.Index(j).SetString(id)
			}
		}
	}
	return nil
}
