package controllers

import (
	"testing"
	"time"
)

func TestRetryBackoffDoublesUpToItsCap(t *testing.T) {
	r := retries{delay: DefaultRetryDelay, maxDelay: DefaultMaxRetryDelay}
	for n, want := range map[int]time.Duration{
		1: 0, 2: 10 * time.Second, 3: 20 * time.Second, 6: 160 * time.Second, 7: 5 * time.Minute, 1000: 5 * time.Minute,
	} {
		if got := r.backoff(n); got != want {
			t.Errorf("backoff after failure %d = %s, want %s", n, got, want)
		}
	}
}
