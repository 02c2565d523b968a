package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/autoresearch-dev/autoresearch-operator/internal/agent"
	"github.com/autoresearch-dev/autoresearch-operator/internal/keyenv"
	"github.com/autoresearch-dev/autoresearch-operator/internal/scripted"
	"github.com/autoresearch-dev/autoresearch-operator/internal/steps"
)

// Environment of the Researcher contract beyond what scripted reads.
const (
	envResultFile = "AUTORESEARCH_RESULT_FILE"
	envLogDir     = "AUTORESEARCH_LOG_DIR"
	envFixedFiles = "AUTORESEARCH_FIXED_FILES"
)

// exitBudgetSpent is the agent's exit code when a budget ran out.
const exitBudgetSpent = 2

func newResearcherCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "researcher",
		Short: "Researchers that follow the Researcher contract ($AUTORESEARCH_PROMPT_FILE, the worktree as working directory, a Strategy row)",
	}
	cmd.AddCommand(newScriptedResearcherCommand(), newAgentResearcherCommand())
	return cmd
}

func newScriptedResearcherCommand() *cobra.Command {
	var plan string
	cmd := &cobra.Command{
		Use:   "scripted --plan scripted-researcher.yaml",
		Short: "A deterministic, scripted Researcher for demos and tests: applies the plan's edits for this round (not an LLM)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			inv, err := scripted.InvocationFromEnv(os.Getenv)
			if err != nil {
				return err
			}
			p, err := scripted.LoadPlan(plan)
			if err != nil {
				return err
			}
			dir, err := os.Getwd()
			if err != nil {
				return err
			}
			err = scripted.Run(cmd.Context(), p, inv.Round, inv.Candidate, dir, inv.ExperiencesPath, cmd.OutOrStdout())
			var exit *scripted.ExitError
			if errors.As(err, &exit) {
				return &exitError{code: exit.Code, err: err}
			}
			return err
		},
	}
	cmd.Flags().StringVar(&plan, "plan", "scripted-researcher.yaml", "the plan: one step of edits per round")
	return cmd
}

type agentFlags struct {
	provider, model, baseURL, keyEnv string
	fixed                            []string
	budget                           agent.Budget
	maxCost                          string
	maxOutputTokens, contextWindow   int
	commandTimeout                   time.Duration
	outputLimit                      int
	prices                           string
	priceInput, priceOutput          float64
	priceCacheRead, priceCacheWrite  float64
	retries                          int
}

func newAgentResearcherCommand() *cobra.Command {
	var f agentFlags
	cmd := &cobra.Command{
		Use:   "agent --provider anthropic|openai --model MODEL",
		Short: "The built-in LLM coding agent: reads the round's prompt, edits the worktree through confined tools, records its Strategy row and answers \"Code ready\"",
		Long: `The built-in Researcher. It speaks the Anthropic Messages API (--provider anthropic)
or the OpenAI Chat Completions API (--provider openai), which also covers
self-hosted servers such as vLLM or llama.cpp (--base-url http://host:8000/v1).

The API key comes from the environment only: AUTORESEARCH_API_KEY, else
ANTHROPIC_API_KEY or OPENAI_API_KEY, or the variable --api-key-env names.
The fixed files come from --fixed or AUTORESEARCH_FIXED_FILES (comma-separated);
writes to them are refused.

Exit codes: 0 "Code ready"; 2 a turn, token, cost or time budget ran out;
1 anything else (API errors, malformed answers). Usage and the estimated cost
go to $AUTORESEARCH_RESULT_FILE, the transcript to
$AUTORESEARCH_LOG_DIR/transcript.jsonl (else .autoresearch/round-N/).

Anthropic requests mark the prompt for caching; OpenAI caches on its own.
Cached input tokens are counted and priced at the cache rates.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runAgent(cmd, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.provider, "provider", "", "the API: anthropic or openai (OpenAI-compatible servers included)")
	fl.StringVar(&f.model, "model", "", "the model, e.g. claude-sonnet-4-5 or gpt-4.1")
	fl.StringVar(&f.baseURL, "base-url", "", fmt.Sprintf("the API's base URL (default %s for anthropic, %s for openai)", agent.DefaultAnthropicURL, agent.DefaultOpenAIURL))
	fl.StringVar(&f.keyEnv, "api-key-env", "", "the environment variable holding the API key (default AUTORESEARCH_API_KEY, then the provider's)")
	fl.StringArrayVar(&f.fixed, "fixed", nil, "a fixed file, directory or glob of the protocol, relative to the working directory; repeat for each (added to $AUTORESEARCH_FIXED_FILES)")
	fl.IntVar(&f.budget.MaxTurns, "max-turns", 60, "the most model calls; 0 for no limit")
	fl.Int64Var(&f.budget.MaxTokens, "max-tokens", 3_000_000, "the most input plus output tokens over the run; 0 for no limit")
	fl.StringVar(&f.maxCost, "max-cost", "", "the most estimated cost in US dollars, e.g. 2.50 (needs a price)")
	fl.DurationVar(&f.budget.Timeout, "timeout", 0, "the most wall-clock time; set it below researcher.timeout to exit with a reason rather than be killed")
	fl.IntVar(&f.maxOutputTokens, "max-output-tokens", 8192, "the most tokens in one answer; lowered to the model's limit and the context left")
	fl.IntVar(&f.contextWindow, "context-window", 0, "the model's context window in tokens (default: known for common models, else unchecked), e.g. vLLM's --max-model-len")
	fl.DurationVar(&f.commandTimeout, "command-timeout", 2*time.Minute, "the longest one shell command may run")
	fl.IntVar(&f.outputLimit, "output-limit", 16<<10, "bytes of a command's output the model sees (its head and tail)")
	fl.StringVar(&f.prices, "prices", "", `a JSON price table {"model": {"input": 3, "output": 15}} in US dollars per million tokens, over the built-in one`)
	fl.Float64Var(&f.priceInput, "price-input", 0, "this model's input price in US dollars per million tokens (with --price-output)")
	fl.Float64Var(&f.priceOutput, "price-output", 0, "this model's output price in US dollars per million tokens (with --price-input)")
	fl.Float64Var(&f.priceCacheRead, "price-cache-read", 0, "this model's price of cached input tokens in US dollars per million (default 0.1× input for anthropic, the list price or 0.5× input for openai)")
	fl.Float64Var(&f.priceCacheWrite, "price-cache-write", 0, "this model's price of input tokens written to the cache in US dollars per million (default 1.25× input for anthropic)")
	fl.IntVar(&f.retries, "retries", 8, "tries per model call when the API is overloaded or rate-limits")
	return cmd
}

func runAgent(cmd *cobra.Command, f agentFlags) error {
	// The shell tool runs what the model chooses as the agent's user, and
	// its environment lacks the API key, which the agent's own still
	// holds: undumpable, the agent's /proc/<pid>/environ and memory are
	// out of that shell's reach.
	if err := undumpable(); err != nil {
		return fmt.Errorf("make the agent undumpable: %w", err)
	}
	if f.model == "" {
		return errors.New("--model is required")
	}
	inv, err := scripted.InvocationFromEnv(os.Getenv)
	if err != nil {
		return err
	}
	prompt, err := os.ReadFile(inv.PromptFile)
	if err != nil {
		return err
	}
	key, source, err := agent.APIKey(f.provider, f.keyEnv, os.Getenv)
	// Only a self-hosted OpenAI-compatible server may go without a key.
	keyless := f.provider == agent.ProviderOpenAI && f.baseURL != "" && f.keyEnv == ""
	if err != nil && !keyless {
		return err
	}
	redact := agent.NewRedactor(key)
	price, err := f.price()
	if err != nil {
		return err
	}
	if f.maxCost != "" {
		if f.budget.MaxCost, err = strconv.ParseFloat(f.maxCost, 64); err != nil || f.budget.MaxCost <= 0 {
			return fmt.Errorf("--max-cost %q: want a positive number of US dollars", f.maxCost)
		}
	}
	if f.contextWindow < 0 {
		return fmt.Errorf("--context-window %d: want a number of tokens, or 0 for the model's known window", f.contextWindow)
	}
	dir, err := os.Getwd()
	if err != nil {
		return err
	}
	fixed := agentFixedFiles(f.fixed, os.Getenv(envFixedFiles))
	if len(fixed) == 0 {
		fmt.Fprintf(cmd.ErrOrStderr(), "warning: no fixed files given (--fixed or %s): writes to them are not refused here; the supervisor's compliance check still rolls them back\n", envFixedFiles)
	}

	logDir := os.Getenv(envLogDir)
	if logDir == "" {
		logDir = filepath.Join(dir, ".autoresearch", fmt.Sprintf("round-%d", inv.Round))
	}
	transcript, closer, err := agent.OpenTranscript(filepath.Join(logDir, "transcript.jsonl"), redact, time.Now)
	if err != nil {
		return fmt.Errorf("transcript: %w", err)
	}
	defer closer.Close()

	client := agent.ClientOptions{
		BaseURL: f.baseURL, APIKey: key, KeySource: source,
		Retry: agent.RetryPolicy{Attempts: f.retries},
		OnRetry: func(r agent.Retry) {
			msg := redact.String(r.Err.Error())
			fmt.Fprintf(cmd.OutOrStdout(), "retrying in %s (attempt %d): %s\n", r.Wait.Round(time.Millisecond), r.Attempt, msg)
			transcript.Record(agent.Entry{Kind: "retry", Text: msg, Wait: r.Wait.String()})
		},
	}
	var provider agent.Provider
	switch f.provider {
	case agent.ProviderAnthropic:
		provider = agent.NewAnthropic(client)
	case agent.ProviderOpenAI:
		provider = agent.NewOpenAI(client)
	default:
		return fmt.Errorf("--provider %q: want %s or %s", f.provider, agent.ProviderAnthropic, agent.ProviderOpenAI)
	}
	tools, err := agent.NewToolbox(agent.ToolboxOptions{
		Dir: dir, Fixed: fixed, ExperiencesPath: inv.ExperiencesPath, Round: inv.Round,
		CommandTimeout: f.commandTimeout, OutputLimit: f.outputLimit,
		Env: keyenv.Without(os.Environ(), key), Redact: redact,
	})
	if err != nil {
		return err
	}
	defer tools.Close()

	// The runner stops a Researcher with SIGTERM: finish the books first.
	ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	fmt.Fprintf(cmd.OutOrStdout(), "%s %s, round %d, in %s\n", f.provider, f.model, inv.Round, dir)
	res, runErr := agent.Run(ctx, agent.Config{
		Provider: provider, Model: f.model, Prompt: string(prompt), Tools: tools,
		Budget: f.budget, MaxOutputTokens: f.maxOutputTokens, ContextWindow: f.contextWindow, Price: price,
		Transcript: transcript, Log: cmd.OutOrStdout(),
	})
	fmt.Fprintf(cmd.OutOrStdout(), "%d turns, %d input and %d output tokens", res.Turns, res.Usage.InputTokens, res.Usage.OutputTokens)
	if u := res.Usage; u.CacheReadTokens+u.CacheWriteTokens > 0 {
		fmt.Fprintf(cmd.OutOrStdout(), " (%d input tokens read from the cache, %d written to it)", u.CacheReadTokens, u.CacheWriteTokens)
	}
	if res.Priced {
		fmt.Fprintf(cmd.OutOrStdout(), ", about $%s", res.CostString())
	}
	fmt.Fprintln(cmd.OutOrStdout())
	if runErr == nil {
		fmt.Fprintln(cmd.OutOrStdout(), agent.CodeReady)
	}
	if path := os.Getenv(envResultFile); path != "" {
		if err := writeAgentReport(path, res, runErr, redact); err != nil {
			fmt.Fprintf(cmd.ErrOrStderr(), "warning: %s: %v\n", envResultFile, err)
		}
	}
	if runErr == nil {
		return nil
	}
	code := 1
	var budget *agent.BudgetError
	if errors.As(runErr, &budget) {
		code = exitBudgetSpent
	}
	return &exitError{code: code, err: errors.New(redact.String(runErr.Error()))}
}

// price is the model's price from the flags, the --prices file or the
// built-in table; nil when none knows the model.
func (f agentFlags) price() (*agent.Price, error) {
	if f.priceInput < 0 || f.priceOutput < 0 || f.priceCacheRead < 0 || f.priceCacheWrite < 0 {
		return nil, errors.New("prices cannot be negative")
	}
	if f.priceInput != 0 || f.priceOutput != 0 {
		return &agent.Price{Input: f.priceInput, Output: f.priceOutput, CacheRead: f.priceCacheRead, CacheWrite: f.priceCacheWrite}, nil
	}
	table := agent.DefaultPrices
	if f.prices != "" {
		extra, err := agent.LoadPrices(f.prices)
		if err != nil {
			return nil, err
		}
		table = table.With(extra)
	}
	p, ok := table.Lookup(f.model)
	if !ok {
		return nil, nil
	}
	if f.priceCacheRead != 0 {
		p.CacheRead = f.priceCacheRead
	}
	if f.priceCacheWrite != 0 {
		p.CacheWrite = f.priceCacheWrite
	}
	return &p, nil
}

// agentFixedFiles joins the --fixed flags and the comma-separated variable.
func agentFixedFiles(flags []string, env string) []string {
	var out []string
	for _, f := range append(slices.Clone(flags), strings.Split(env, ",")...) {
		if f = strings.TrimSpace(f); f != "" && !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	return out
}

func writeAgentReport(path string, res agent.Result, runErr error, redact *agent.Redactor) error {
	u := res.Usage
	report := steps.ResearcherReport{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens,
		CacheReadTokens: u.CacheReadTokens, CacheWriteTokens: u.CacheWriteTokens, Cost: res.CostString()}
	if runErr != nil {
		report.Error = redact.String(runErr.Error())
	}
	data, err := json.Marshal(report)
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}
