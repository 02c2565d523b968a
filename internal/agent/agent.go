// Package agent is the built-in Researcher: an LLM coding agent that speaks
// the Anthropic Messages API or an OpenAI-compatible Chat Completions API,
// edits the worktree through tools confined to its working directory,
// records its Strategy row, and stops at "Code ready" or when a turn,
// token, cost or time budget is spent. It owns the model clients (retries
// included), the tools and their rules, the usage and cost accounting,
// and the redacted transcript.
package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
)

// CodeReady is the answer that ends a successful run, as the seed asks.
const CodeReady = "Code ready"

// maxReminders is how many times in a row the agent reminds a model that
// stops early before it gives up.
const maxReminders = 3

// Budget bounds one run. Zero fields are unlimited.
type Budget struct {
	// MaxTurns is the number of model calls.
	MaxTurns int
	// MaxTokens caps input plus output tokens over all calls.
	MaxTokens int64
	// MaxCost caps the estimated cost in US dollars; it needs a price.
	MaxCost float64
	// Timeout caps the wall-clock time of the run.
	Timeout time.Duration
}

// BudgetError says which budget ran out before "Code ready".
type BudgetError struct {
	// Resource is "turns", "tokens", "cost" or "time".
	Resource string
	Limit    string
	Used     string
	// Strategy is what the model had recorded, if anything.
	Strategy string
}

func (e *BudgetError) Error() string {
	s := fmt.Sprintf("%s budget spent before %q: used %s of %s", e.Resource, CodeReady, e.Used, e.Limit)
	if e.Strategy != "" {
		return s + "; strategy so far: " + e.Strategy
	}
	return s + "; no strategy recorded"
}

// Config is one Researcher run.
type Config struct {
	Provider Provider
	Model    string
	// Prompt is the round's prompt ($AUTORESEARCH_PROMPT_FILE).
	Prompt string
	// Tools are the model's tools, confined to the working directory.
	Tools  *Toolbox
	Budget Budget
	// MaxOutputTokens caps each answer; defaults to 8192. It is clamped to
	// the model's output ceiling and to the room left in its context.
	MaxOutputTokens int
	// ContextWindow is the model's context in tokens; zero takes it from
	// ModelLimits, and an unknown model's room is not checked.
	ContextWindow int
	// Price estimates the cost; nil when the model's price is unknown. Its
	// zero cache rates take the provider's defaults.
	Price *Price
	// Transcript, when set, receives the whole conversation.
	Transcript *Transcript
	// Log receives a line per turn for the human and the round's log.
	Log io.Writer
	// Now is the clock; defaults to time.Now.
	Now func() time.Time
}

// Result is what a run consumed and produced, also when it failed.
type Result struct {
	Turns int
	Usage Usage
	// Cost is the estimated cost in US dollars; meaningful when Priced.
	Cost   float64
	Priced bool
	// Strategy is the recorded strategy.
	Strategy string
	// Final is the model's last answer.
	Final string
}

// CostString is the cost as the result file carries it, "" when unknown.
func (r Result) CostString() string {
	if !r.Priced {
		return ""
	}
	return FormatCost(r.Cost)
}

// Run talks to the model until it answers "Code ready" with its strategy
// recorded, or a budget is spent (*BudgetError), or the API fails. The
// Result counts what was used either way.
func Run(ctx context.Context, cfg Config) (Result, error) {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	if cfg.MaxOutputTokens <= 0 {
		cfg.MaxOutputTokens = 8192
	}
	if cfg.Budget.MaxCost > 0 && cfg.Price == nil {
		return Result{}, fmt.Errorf("a cost budget needs the price of %s: give --price-input and --price-output, or --prices", cfg.Model)
	}
	if cfg.Price != nil {
		p := cfg.Price.WithCacheDefaults(cfg.Provider.Name())
		cfg.Price = &p
	}
	start := cfg.Now()
	if cfg.Budget.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, cfg.Budget.Timeout)
		defer cancel()
	}
	r := &run{cfg: cfg, start: start, res: Result{Priced: cfg.Price != nil}}
	err := r.loop(ctx)
	r.res.Strategy = cfg.Tools.Strategy()
	end := Entry{Kind: "end", Turn: r.res.Turns, Usage: &r.res.Usage, Cost: r.res.CostString(), Text: CodeReady}
	if err != nil {
		end.Text = err.Error()
	}
	cfg.Transcript.Record(end)
	return r.res, err
}

type run struct {
	cfg   Config
	start time.Time
	res   Result
}

func (r *run) loop(ctx context.Context) error {
	system := systemPrompt(r.cfg.Tools)
	specs := r.cfg.Tools.Specs()
	r.cfg.Transcript.Record(Entry{Kind: "start", Provider: r.cfg.Provider.Name(), Model: r.cfg.Model})
	r.cfg.Transcript.Record(Entry{Kind: "system", Text: system})
	r.cfg.Transcript.Record(Entry{Kind: "user", Text: r.cfg.Prompt})
	msgs := []Message{{Role: RoleUser, Text: r.cfg.Prompt}}
	limits, _ := longestPrefix(ModelLimits, r.cfg.Model)
	if r.cfg.ContextWindow > 0 {
		limits.Context = r.cfg.ContextWindow
	}
	var use contextUse
	use.add(system)
	use.add(r.cfg.Prompt)
	use.addSpecs(specs)
	want := r.cfg.MaxOutputTokens
	reminders := 0
	for {
		if err := r.checkBudget(ctx); err != nil {
			return err
		}
		maxTokens, err := limits.clamp(want, use)
		if err != nil {
			r.cfg.Transcript.Record(Entry{Kind: "error", Turn: r.res.Turns + 1, Text: err.Error()})
			return err
		}
		resp, err := r.cfg.Provider.Complete(ctx, Request{
			Model: r.cfg.Model, System: system, Messages: msgs, Tools: specs, MaxTokens: maxTokens,
		})
		if err != nil {
			if budget := r.timeSpent(ctx); budget != nil {
				return budget
			}
			if ctx.Err() != nil {
				return fmt.Errorf("stopped before %q: %w", CodeReady, ctx.Err())
			}
			r.cfg.Transcript.Record(Entry{Kind: "error", Turn: r.res.Turns + 1, Text: err.Error()})
			return err
		}
		r.res.Turns++
		r.res.Usage = r.res.Usage.Add(resp.Usage)
		if r.cfg.Price != nil {
			r.res.Cost = r.cfg.Price.Cost(r.res.Usage)
		}
		r.res.Final = resp.Text
		r.cfg.Transcript.Record(Entry{Kind: "assistant", Turn: r.res.Turns, Text: resp.Text, ToolCalls: resp.ToolCalls,
			StopReason: resp.StopReason, Usage: &resp.Usage, Cost: r.res.CostString()})
		if strings.TrimSpace(resp.Text) != "" {
			r.logf("turn %d: %s\n", r.res.Turns, firstLine(resp.Text))
		}

		// An answer cut off at the output limit ends in a tool call whose
		// arguments are missing or partial: run, it would write empty
		// strings (an edit_file that deletes code). Ask again with room for
		// the whole call, or, without room, tell the model.
		var cut *ToolCall
		if n := len(resp.ToolCalls); resp.Truncated && n > 0 {
			// Asked again, the input is the same, without this answer.
			again := use
			again.answered(Usage{InputTokens: resp.Usage.InputTokens}, "", nil)
			if more, err := limits.clamp(2*maxTokens, again); err == nil && more > maxTokens {
				r.logf("turn %d: the answer was cut off at %d tokens inside a tool call; asking again for up to %d\n", r.res.Turns, maxTokens, more)
				use, want = again, more
				continue
			}
			cut = &resp.ToolCalls[n-1]
			resp.ToolCalls = resp.ToolCalls[:n-1]
		}
		want = r.cfg.MaxOutputTokens
		use.answered(resp.Usage, resp.Text, resp.ToolCalls)

		reply := Message{Role: RoleAssistant, Text: resp.Text, ToolCalls: resp.ToolCalls}
		if strings.TrimSpace(reply.Text) == "" {
			// The Messages API refuses a whitespace-only text block with a
			// 400, and both APIs an empty assistant message.
			reply.Text = ""
			if len(reply.ToolCalls) == 0 {
				reply.Text = "(no answer)"
			}
		}
		msgs = append(msgs, reply)

		if len(resp.ToolCalls) > 0 {
			reminders = 0
			results := r.callTools(ctx, resp.ToolCalls)
			r.cfg.Transcript.Record(Entry{Kind: "tool", Turn: r.res.Turns, ToolResults: results})
			use.addResults(results)
			next := Message{Role: RoleUser, ToolResults: results}
			if cut != nil {
				next.Text = cutOff(cut)
				r.cfg.Transcript.Record(Entry{Kind: "user", Turn: r.res.Turns, Text: next.Text})
				use.add(next.Text)
			}
			msgs = append(msgs, next)
			continue
		}
		reminder := r.reminder(resp, cut)
		if reminder == "" {
			return nil
		}
		if reminders++; reminders > maxReminders {
			return fmt.Errorf("the model stopped %d times without finishing: %s", reminders, reminder)
		}
		r.logf("turn %d: the model stopped early; reminded: %s\n", r.res.Turns, reminder)
		r.cfg.Transcript.Record(Entry{Kind: "user", Turn: r.res.Turns, Text: reminder})
		use.add(reminder)
		msgs = append(msgs, Message{Role: RoleUser, Text: reminder})
	}
}

// cutOff tells the model that its answer hit the output limit, and which
// tool call was dropped unrun for it.
func cutOff(dropped *ToolCall) string {
	s := "Your answer was cut off at the output token limit"
	if dropped != nil {
		s += fmt.Sprintf("; the call to %s was incomplete and was not run", dropped.Name)
	}
	return s + ". Continue, in smaller steps (edit_file instead of rewriting whole files)."
}

// reminder says what an answer without tool calls lacks, or "" when the
// run is complete.
func (r *run) reminder(resp Response, cut *ToolCall) string {
	switch {
	case resp.Truncated:
		return cutOff(cut)
	case r.cfg.Tools.Strategy() == "":
		return "You have not recorded your strategy. Call record_strategy with one line saying what you change and why, then finish the task and answer \"Code ready\"."
	case !strings.Contains(resp.Text, CodeReady):
		return "If the code is ready, answer exactly \"Code ready\". Otherwise continue with the tools."
	}
	return ""
}

// logf writes a progress line to the log. The log is for the human
// watching, and the transcript records the same turns: a write that fails
// must not stop the Researcher, so its error is dropped.
func (r *run) logf(format string, args ...any) {
	_, _ = fmt.Fprintf(r.cfg.Log, format, args...)
}

func (r *run) callTools(ctx context.Context, calls []ToolCall) []ToolResult {
	results := make([]ToolResult, 0, len(calls))
	for _, c := range calls {
		res := r.cfg.Tools.Call(ctx, c)
		status := "ok"
		if res.IsError {
			status = firstLine(lastLine(res.Content))
		}
		r.logf("turn %d: %s %s: %s\n", r.res.Turns, c.Name, describeArgs(c), status)
		results = append(results, res)
	}
	return results
}

// checkBudget runs before each call to the model.
func (r *run) checkBudget(ctx context.Context) error {
	b := r.cfg.Budget
	spent := func(resource, limit, used string) error {
		return &BudgetError{Resource: resource, Limit: limit, Used: used, Strategy: r.cfg.Tools.Strategy()}
	}
	switch {
	case b.MaxTurns > 0 && r.res.Turns >= b.MaxTurns:
		return spent("turns", fmt.Sprintf("%d (--max-turns)", b.MaxTurns), fmt.Sprint(r.res.Turns))
	case b.MaxTokens > 0 && r.res.Usage.Total() >= b.MaxTokens:
		return spent("tokens", fmt.Sprintf("%d (--max-tokens)", b.MaxTokens), fmt.Sprint(r.res.Usage.Total()))
	case b.MaxCost > 0 && r.res.Cost >= b.MaxCost:
		return spent("cost", "$"+FormatCost(b.MaxCost)+" (--max-cost)", "$"+FormatCost(r.res.Cost))
	}
	if err := r.timeSpent(ctx); err != nil {
		return err
	}
	if ctx.Err() != nil {
		return fmt.Errorf("stopped before %q: %w", CodeReady, ctx.Err())
	}
	return nil
}

// timeSpent is a BudgetError once the run's own time budget is over.
func (r *run) timeSpent(ctx context.Context) error {
	if r.cfg.Budget.Timeout <= 0 {
		return nil
	}
	used := r.cfg.Now().Sub(r.start)
	if used < r.cfg.Budget.Timeout && !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return nil
	}
	return &BudgetError{Resource: "time", Limit: r.cfg.Budget.Timeout.String() + " (--timeout)",
		Used: used.Round(time.Second).String(), Strategy: r.cfg.Tools.Strategy()}
}

// describeArgs is a short form of a call for the log: its path or command.
func describeArgs(c ToolCall) string {
	var args struct {
		Path    string `json:"path"`
		Command string `json:"command"`
	}
	if json.Unmarshal([]byte(c.Arguments), &args) != nil {
		return ""
	}
	return firstLine(args.Path + args.Command)
}
func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	const n = 160
	if len(s) > n {
		s = s[:n] + "…"
	}
	return s
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}
