package main

import (
	"errors"
	"flag"
	"fmt"
	"strconv"
	"strings"
)

// errNotBytes says why a value of a byte flag does not parse.
var errNotBytes = errors.New("not a number of bytes (like 20MB, 512kB, 1GiB or 0)")

// byteUnits are the suffixes a byte flag takes, longest first: decimal (kB,
// MB, GB, as memcached's and mcrouter's documentation write rates) and
// binary (KiB, MiB, GiB); the letter alone (k, M, G) is decimal too, and a
// number alone is bytes.
var byteUnits = []struct {
	suffix string
	scale  int64
}{
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30},
	{"kB", 1e3}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9},
	{"k", 1e3}, {"K", 1e3}, {"M", 1e6}, {"G", 1e9}, {"B", 1},
}

// parseBytes reads a count of bytes: a whole number, optionally followed
// by one of byteUnits (20MB is 20,000,000).
func parseBytes(s string) (int64, error) {
	num, scale := s, int64(1)
	for _, u := range byteUnits {
		if strings.HasSuffix(s, u.suffix) {
			num, scale = strings.TrimSpace(strings.TrimSuffix(s, u.suffix)), u.scale
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n > (1<<62)/scale || n < -(1<<62)/scale {
		return 0, errNotBytes
	}
	return n * scale, nil
}

// bytesValue is a flag.Value holding a count of bytes (parseBytes).
type bytesValue int64

func (b *bytesValue) Set(s string) error {
	n, err := parseBytes(s)
	if err != nil {
		return err
	}
	*b = bytesValue(n)
	return nil
}

func (b *bytesValue) String() string { return fmt.Sprint(int64(*b)) }

// bytesFlag defines a byte-count flag (parseBytes).
func bytesFlag(field func(*serveConfig) *int64) flagDefiner {
	return func(fs *flag.FlagSet, cfg *serveConfig, name, usage string) error {
		fs.Var((*bytesValue)(field(cfg)), name, usage)
		return errNotBytes
	}
}
