//go:build !linux

package metrics

const hasProcessSeries = false
