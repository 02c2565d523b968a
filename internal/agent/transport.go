package agent

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// ErrMalformed marks an answer that is not what the API documents.
var ErrMalformed = errors.New("malformed answer")

// maxResponseBytes bounds how much of an answer is read.
const maxResponseBytes = 32 << 20

// APIError is an error answer from a model API.
type APIError struct {
	Provider string
	// Status is the HTTP status code.
	Status int
	// Type and Message come from the error body when it has them.
	Type    string
	Message string
	// RequestID helps the provider's support find the request.
	RequestID string
	// Retryable errors are tried again after a wait.
	Retryable bool
	// Hint says what the user can do about it.
	Hint string
}

func (e *APIError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: HTTP %d", e.Provider, e.Status)
	if e.Type != "" {
		fmt.Fprintf(&b, " %s", e.Type)
	}
	if e.Message != "" {
		fmt.Fprintf(&b, ": %s", e.Message)
	}
	if e.RequestID != "" {
		fmt.Fprintf(&b, " (request %s)", e.RequestID)
	}
	if e.Hint != "" {
		fmt.Fprintf(&b, " — %s", e.Hint)
	}
	return b.String()
}

// RetryPolicy says how often and how long to wait when an API is
// overloaded or rate-limits.
type RetryPolicy struct {
	// Attempts is the number of tries in all; 1 never retries.
	Attempts int
	// Base is the first backoff; it doubles up to Max. A retry-after
	// header, when the answer has one, replaces the backoff.
	Base, Max time.Duration
	// Sleep waits for d or until ctx ends; tests make it instant.
	Sleep func(ctx context.Context, d time.Duration) error
	// Now is the clock for HTTP-date retry-after values.
	Now func() time.Time
}

// DefaultRetryPolicy tries 8 times over about four minutes.
func DefaultRetryPolicy() RetryPolicy {
	return RetryPolicy{Attempts: 8, Base: 2 * time.Second, Max: 60 * time.Second, Sleep: sleepContext, Now: time.Now}
}

func sleepContext(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Retry is one wait before trying a request again, for the log.
type Retry struct {
	Attempt int
	Wait    time.Duration
	Err     error
}

// ClientOptions configure a provider client.
type ClientOptions struct {
	// BaseURL replaces the provider's public endpoint, e.g. a vLLM server.
	BaseURL string
	// APIKey authenticates; it never appears in errors or the transcript.
	APIKey string
	// KeySource names where the key came from (an environment variable),
	// for the hint of an authentication error.
	KeySource string
	// HTTPClient defaults to a plain client; RequestTimeout bounds each try.
	HTTPClient *http.Client
	// RequestTimeout is how long one try may wait for its answer before it
	// counts as a network error and is retried; defaults to 10 minutes.
	RequestTimeout time.Duration
	Retry          RetryPolicy
	// OnRetry, when set, hears about every wait before a retry.
	OnRetry func(Retry)
}

// classifier turns a non-200 answer into an APIError.
type classifier func(status int, header http.Header, body []byte) *APIError

type transport struct {
	provider       string
	client         *http.Client
	requestTimeout time.Duration
	retry          RetryPolicy
	onRetry        func(Retry)
}

// defaultRequestTimeout leaves room for long answers from slow models.
const defaultRequestTimeout = 10 * time.Minute

func newTransport(provider string, o ClientOptions) *transport {
	t := &transport{provider: provider, client: o.HTTPClient, requestTimeout: o.RequestTimeout, retry: o.Retry, onRetry: o.OnRetry}
	if t.client == nil {
		t.client = &http.Client{}
	}
	if t.requestTimeout <= 0 {
		t.requestTimeout = defaultRequestTimeout
	}
	def := DefaultRetryPolicy()
	if t.retry.Attempts < 1 {
		t.retry.Attempts = def.Attempts
	}
	if t.retry.Base <= 0 {
		t.retry.Base = def.Base
	}
	if t.retry.Max <= 0 {
		t.retry.Max = def.Max
	}
	if t.retry.Sleep == nil {
		t.retry.Sleep = def.Sleep
	}
	if t.retry.Now == nil {
		t.retry.Now = def.Now
	}
	return t
}

// post sends body to url and returns the body of a 200 answer. It retries
// what classify marks retryable, and network errors, waiting as the
// answer's retry-after says or with jittered exponential backoff, but never
// past ctx's deadline.
func (t *transport) post(ctx context.Context, url string, header http.Header, body []byte, classify classifier) ([]byte, error) {
	var last error
	for attempt := 1; ; attempt++ {
		status, respHeader, data, err := t.once(ctx, url, header, body)
		switch {
		case err != nil && ctx.Err() != nil:
			return nil, ctx.Err()
		case err != nil:
			last = fmt.Errorf("%s: %w", t.provider, err)
		case status == http.StatusOK:
			return data, nil
		default:
			apiErr := classify(status, respHeader, data)
			apiErr.Provider = t.provider
			if !apiErr.Retryable {
				return nil, apiErr
			}
			last = apiErr
		}
		if attempt >= t.retry.Attempts {
			return nil, fmt.Errorf("giving up after %d attempts: %w", attempt, last)
		}
		wait, ok := retryAfter(respHeader, t.retry.Now())
		if !ok {
			wait = t.backoff(attempt)
		}
		if deadline, has := ctx.Deadline(); has && t.retry.Now().Add(wait).After(deadline) {
			return nil, fmt.Errorf("not retrying: waiting %s would pass the time budget: %w", wait, last)
		}
		if t.onRetry != nil {
			t.onRetry(Retry{Attempt: attempt, Wait: wait, Err: last})
		}
		if err := t.retry.Sleep(ctx, wait); err != nil {
			return nil, err
		}
	}
}

func (t *transport) once(ctx context.Context, url string, header http.Header, body []byte) (int, http.Header, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, t.requestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, nil, nil, err
	}
	req.Header = header.Clone()
	resp, err := t.client.Do(req)
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return 0, nil, nil, fmt.Errorf("no answer within %s", t.requestTimeout)
	}
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	if err != nil {
		return 0, nil, nil, fmt.Errorf("reading the answer: %w", err)
	}
	return resp.StatusCode, resp.Header, data, nil
}

// backoff is Base·2^(attempt-1), capped at Max, with the upper half
// jittered so that many clients do not retry in step.
func (t *transport) backoff(attempt int) time.Duration {
	d := t.retry.Base << min(attempt-1, 20)
	if d <= 0 || d > t.retry.Max {
		d = t.retry.Max
	}
	half := d / 2
	return half + rand.N(half+1)
}

// maxRetryAfter caps what a server may ask us to wait.
const maxRetryAfter = 10 * time.Minute

// retryAfter reads retry-after-ms, then retry-after in seconds or as an
// HTTP date.
func retryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	if h == nil {
		return 0, false
	}
	var d time.Duration
	if ms, err := strconv.ParseFloat(strings.TrimSpace(h.Get("retry-after-ms")), 64); err == nil && ms >= 0 {
		d = time.Duration(ms * float64(time.Millisecond))
	} else if v := strings.TrimSpace(h.Get("retry-after")); v == "" {
		return 0, false
	} else if s, err := strconv.ParseFloat(v, 64); err == nil && s >= 0 {
		d = time.Duration(s * float64(time.Second))
	} else if at, err := http.ParseTime(v); err == nil {
		d = max(at.Sub(now), 0)
	} else {
		return 0, false
	}
	return min(d, maxRetryAfter), true
}

// retryableStatus is what every provider may answer when it is busy rather
// than when the request is wrong: 529 is Anthropic's "overloaded".
func retryableStatus(status int) bool {
	switch status {
	case http.StatusRequestTimeout, http.StatusTooManyRequests, http.StatusInternalServerError,
		http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout, 529:
		return true
	}
	return false
}

// statusHint says what a user can do about a permanent error.
func statusHint(status int, keyHint, url string) string {
	switch status {
	case http.StatusUnauthorized:
		return "the API key was rejected; " + keyHint
	case http.StatusForbidden:
		return "the API key may not use this model or endpoint; " + keyHint
	case http.StatusNotFound:
		return "no such model or endpoint: check --model and --base-url (requests go to " + url + ")"
	case http.StatusRequestEntityTooLarge:
		return "the conversation is too large for the API"
	}
	return ""
}

// snippet is the start of a body, for messages about malformed answers.
func snippet(body []byte) string {
	const n = 200
	s := strings.TrimSpace(string(body))
	if len(s) > n {
		s = s[:n] + "…"
	}
	return s
}
