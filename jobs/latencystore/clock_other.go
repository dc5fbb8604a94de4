//go:build !linux

package latencystore

func newAlarm() alarm { return newSpinAlarm() }
