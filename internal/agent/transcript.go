package agent

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"
)

// redacted replaces secrets in everything the agent writes down.
const redacted = "[REDACTED]"

// minSecretLen keeps a very short "secret" from blanking out ordinary words.
const minSecretLen = 8

// keyPatterns catch API keys the agent was not told about, e.g. one a
// command printed from the environment.
var keyPatterns = regexp.MustCompile(`\bsk-(?:ant-|proj-)?[A-Za-z0-9_\-]{16,}`)

// Redactor removes secrets from text.
type Redactor struct {
	secrets *strings.Replacer
}

// NewRedactor returns a Redactor for the given secrets and for strings
// shaped like Anthropic or OpenAI keys.
func NewRedactor(secrets ...string) *Redactor {
	var pairs []string
	for _, s := range secrets {
		if len(s) >= minSecretLen {
			pairs = append(pairs, s, redacted)
		}
	}
	return &Redactor{secrets: strings.NewReplacer(pairs...)}
}

// String returns s without secrets.
func (r *Redactor) String(s string) string {
	if r == nil {
		return s
	}
	return keyPatterns.ReplaceAllString(r.secrets.Replace(s), redacted)
}

// Entry is one line of the transcript.
type Entry struct {
	Time time.Time `json:"time"`
	// Kind is "start", "system", "user", "assistant", "tool", "retry",
	// "error" or "end".
	Kind string `json:"kind"`
	Turn int    `json:"turn,omitempty"`
	// Provider and Model are set on "start".
	Provider string `json:"provider,omitempty"`
	Model    string `json:"model,omitempty"`
	// Text is a message's text, or an error's.
	Text        string       `json:"text,omitempty"`
	ToolCalls   []ToolCall   `json:"toolCalls,omitempty"`
	ToolResults []ToolResult `json:"toolResults,omitempty"`
	StopReason  string       `json:"stopReason,omitempty"`
	Usage       *Usage       `json:"usage,omitempty"`
	Cost        string       `json:"cost,omitempty"`
	Wait        string       `json:"wait,omitempty"`
}

// Transcript writes the conversation as JSON lines with secrets redacted.
// A nil *Transcript writes nothing.
type Transcript struct {
	mu     sync.Mutex
	w      io.Writer
	redact *Redactor
	now    func() time.Time
}

// NewTranscript writes to w.
func NewTranscript(w io.Writer, r *Redactor, now func() time.Time) *Transcript {
	if now == nil {
		now = time.Now
	}
	return &Transcript{w: w, redact: r, now: now}
}

// OpenTranscript appends to the file at path, creating it and its
// directory; a rerun of a round keeps the earlier attempt above it.
func OpenTranscript(path string, r *Redactor, now func() time.Time) (*Transcript, io.Closer, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, nil, err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, nil, err
	}
	return NewTranscript(f, r, now), f, nil
}

// Record writes one entry; a failing transcript never stops the agent.
func (t *Transcript) Record(e Entry) {
	if t == nil {
		return
	}
	e.Time = t.now().UTC()
	data, err := json.Marshal(e)
	if err != nil {
		return
	}
	line := t.redact.String(string(data))
	t.mu.Lock()
	defer t.mu.Unlock()
	_, _ = io.WriteString(t.w, line+"\n")
}
