package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/mqplan/mqplan/plans"
)

// shardsFlag is --shards N: how many processes a sharded run splits the
// plan over, a whole number from 1 to plans.MaxShards; 0 means not given.
type shardsFlag int

func (f *shardsFlag) String() string {
	if f == nil || *f == 0 {
		return ""
	}
	return strconv.Itoa(int(*f))
}

func (f *shardsFlag) Set(s string) error {
	n, err := parseShards(s)
	if err != nil {
		return err
	}
	*f = shardsFlag(n)
	return nil
}

// parseShards reads a shard count: digits only (no sign, no spaces), from
// 1 to plans.MaxShards.
func parseShards(s string) (int, error) {
	if s == "" || strings.Trim(s, "0123456789") != "" || len(s) > 5 {
		return 0, fmt.Errorf("%q is not a shard count: give a whole number from 1 to %d", s, plans.MaxShards)
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > plans.MaxShards {
		return 0, fmt.Errorf("%q is out of range: give a whole number from 1 to %d", s, plans.MaxShards)
	}
	return n, nil
}
