package main

import (
	"flag"
	"fmt"
	"time"
)

// durationValue is a flag.Value holding a time.Duration written as Go's
// time.ParseDuration reads it (https://pkg.go.dev/time#ParseDuration):
// "5s", "1m30s", "500ms". Unlike flag.Duration, whose error is only
// "parse error", a refusal says how to write one.
type durationValue struct{ p *time.Duration }

func (v durationValue) String() string {
	if v.p == nil {
		return "0s"
	}
	return v.p.String()
}

func (v durationValue) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("%q is not a duration; write a number with a unit, such as 5s, 1m30s or 500ms (units ns, us, ms, s, m, h)", s)
	}
	*v.p = d
	return nil
}

// durationFlag defines a duration flag name with default def (durationValue).
func durationFlag(fs *flag.FlagSet, name string, def time.Duration, usage string) *time.Duration {
	p := new(time.Duration)
	*p = def
	fs.Var(durationValue{p}, name, usage)
	return p
}
