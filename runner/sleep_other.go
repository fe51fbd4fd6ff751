//go:build !linux

package runner

func newSleeper() (sleeper, error) { return newTimerSleeper(), nil }
