package main

import (
	"time"

	"github.com/alecthomas/kong"

	"github.com/ctxstore/ctxstore/store"
)

// timeFlag is an optional time given on the command line: RFC 3339
// (2024-05-01T12:00:00Z, fractions and offsets allowed) or a date
// (2024-05-01, midnight UTC). A malformed value is a usage error.
type timeFlag struct {
	t   time.Time
	set bool
}

// Decode implements kong.MapperValue.
func (f *timeFlag) Decode(ctx *kong.DecodeContext) error {
	var s string
	if err := ctx.Scan.PopValueInto("time", &s); err != nil {
		return err
	}
	t, err := parseTime(s)
	if err != nil {
		return err
	}
	f.t, f.set = t, true
	return nil
}

// ptr returns the time, or nil if the flag was not given.
func (f timeFlag) ptr() *time.Time {
	if !f.set {
		return nil
	}
	t := f.t
	return &t
}

func parseTime(s string) (time.Time, error) {
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return store.MS(t), nil
	}
	return store.ParseTime(s)
}

// basisFlags choose the point in both times a read sees.
type basisFlags struct {
	ValidTime timeFlag `name:"valid-time" placeholder:"TIME" help:"Read at this valid time (default: now)."`
	TxID      *int64   `name:"tx-id" placeholder:"N" xor:"tx-basis" help:"See only transactions up to and including tx N (default: the latest)."`
	TxTime    timeFlag `name:"tx-time" placeholder:"TIME" xor:"tx-basis" help:"See only transactions made at or before TIME."`
}

func (b basisFlags) basis() store.Basis {
	return store.Basis{ValidTime: b.ValidTime.t, TxID: b.TxID, TxTime: b.TxTime.ptr()}
}

// validRange is the --valid-from/--valid-to pair of put and delete.
type validRange struct {
	ValidFrom timeFlag `name:"valid-from" placeholder:"TIME" help:"Start of the valid-time range (default: the transaction time)."`
	ValidTo   timeFlag `name:"valid-to" placeholder:"TIME" help:"End of the valid-time range, exclusive (default: open-ended; needs --valid-from)."`
}

// check reports an inconsistent range as a usage error.
func (r validRange) check() error {
	if r.ValidTo.set && !r.ValidFrom.set {
		return usagef("--valid-to needs --valid-from")
	}
	if r.ValidTo.set && r.ValidTo.t.Before(r.ValidFrom.t) {
		return usagef("--valid-to %s is before --valid-from %s", store.FormatTime(r.ValidTo.t), store.FormatTime(r.ValidFrom.t))
	}
	return nil
}
