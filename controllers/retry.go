package controllers

import (
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
)

// Default delays between the failures of a step and its next try: the
// first failure is retried at once, each later one waits twice as long as
// the one before, up to the cap, as the kubelet backs off a container that
// keeps crashing.
const (
	DefaultRetryDelay    = 10 * time.Second
	DefaultMaxRetryDelay = 5 * time.Minute
)

// retries remembers, by experiment and child name, how often a child
// failed through no fault of the candidate and when it may be made again.
// Like the kubelet's crash-loop backoff it lives in memory: a restarted
// operator tries once at once, then backs off anew.
type retries struct {
	delay, maxDelay time.Duration

	mu sync.Mutex
	// by holds each experiment's children that failed.
	by map[types.NamespacedName]*failures
}

// failures are the children of one experiment, known by its UID, that
// failed, by name.
type failures struct {
	uid      types.UID
	children map[string]*failedChild
}

type failedChild struct {
	// failures counts the child's failures; child is the UID of the last.
	failures int
	child    types.UID
	reason   string
	// notBefore is when the child may be made again.
	notBefore time.Time
}

// of is what is remembered of ar's children; nil when nothing is.
func (r *retries) of(ar *v1alpha1.AutoResearch) *failures {
	f := r.by[client.ObjectKeyFromObject(ar)]
	if f == nil || f.uid != ar.UID {
		// An experiment of the same name that was deleted left it.
		return nil
	}
	return f
}

// failed records that the child uid of experiment ar, named name, failed
// for reason at now, and returns how often the child has failed and how
// long it waits before it is made again. A failure seen again (the cache
// may show a deleted child a little longer) is counted once; first says
// whether this is the first sighting.
func (r *retries) failed(ar *v1alpha1.AutoResearch, name string, uid types.UID, reason string, now time.Time) (n int, wait time.Duration, first bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f := r.of(ar)
	if f == nil {
		if r.by == nil {
			r.by = map[types.NamespacedName]*failures{}
		}
		f = &failures{uid: ar.UID, children: map[string]*failedChild{}}
		r.by[client.ObjectKeyFromObject(ar)] = f
	}
	e := f.children[name]
	if e == nil {
		e = &failedChild{}
		f.children[name] = e
	}
	if e.child == uid {
		return e.failures, max(0, e.notBefore.Sub(now)), false
	}
	e.failures++
	e.child, e.reason = uid, reason
	wait = r.backoff(e.failures)
	e.notBefore = now.Add(wait)
	return e.failures, wait, true
}

// backoff is the wait after the n-th failure.
func (r *retries) backoff(n int) time.Duration {
	if n <= 1 {
		return 0
	}
	d := r.delay
	for i := 2; i < n && d < r.maxDelay; i++ {
		d *= 2
	}
	return min(d, r.maxDelay)
}

// waiting says why the child named name of experiment ar is not made
// before its backoff ends, and how long that is; "" when it may be made.
func (r *retries) waiting(ar *v1alpha1.AutoResearch, name string, now time.Time) (string, time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f := r.of(ar)
	if f == nil || f.children[name] == nil || !now.Before(f.children[name].notBefore) {
		return "", 0
	}
	e := f.children[name]
	// The time, not the time left, so that the status stays the same
	// while the child waits.
	return fmt.Sprintf("%s failed %d times (the last: %s); it is made again at %s",
		name, e.failures, e.reason, e.notBefore.UTC().Format(time.RFC3339)), e.notBefore.Sub(now)
}

// keep forgets the failures of experiment ar's children but those named in
// current: a child whose step is done starts over with a clean slate.
func (r *retries) keep(ar *v1alpha1.AutoResearch, current map[string]bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	key := client.ObjectKeyFromObject(ar)
	f := r.of(ar)
	if f == nil {
		delete(r.by, key)
		return
	}
	for name := range f.children {
		if !current[name] {
			delete(f.children, name)
		}
	}
	if len(f.children) == 0 {
		delete(r.by, key)
	}
}

// forget drops everything remembered of the experiment named key.
func (r *retries) forget(key types.NamespacedName) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.by, key)
}
