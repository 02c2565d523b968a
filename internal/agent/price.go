package agent

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Price is what a model costs, in US dollars per million tokens.
type Price struct {
	Input  float64 `json:"input"`
	Output float64 `json:"output"`
	// CacheRead and CacheWrite price input tokens read from and written to
	// the prompt cache; zero takes the provider's usual fraction of Input
	// (see WithCacheDefaults).
	CacheRead  float64 `json:"cacheRead,omitempty"`
	CacheWrite float64 `json:"cacheWrite,omitempty"`
}

// Cache prices as fractions of the input price.
const (
	// AnthropicCacheRead and AnthropicCacheWrite are the same for every
	// Anthropic model: reads at a tenth, 5-minute writes at 1.25 times.
	AnthropicCacheRead  = 0.1
	AnthropicCacheWrite = 1.25
	// DefaultCacheRead is for other providers when a price does not say:
	// OpenAI charges 0.1 to 0.5 by model, and the highest keeps a cost
	// budget from overspending. They bill no cache writes.
	DefaultCacheRead = 0.5
)

// WithCacheDefaults fills the cache rates p leaves at zero with the
// provider's fractions of the input price.
func (p Price) WithCacheDefaults(provider string) Price {
	read, write := DefaultCacheRead, 1.0
	if provider == ProviderAnthropic {
		read, write = AnthropicCacheRead, AnthropicCacheWrite
	}
	if p.CacheRead == 0 {
		p.CacheRead = read * p.Input
	}
	if p.CacheWrite == 0 {
		p.CacheWrite = write * p.Input
	}
	return p
}

// Cost is the price of u in US dollars.
func (p Price) Cost(u Usage) float64 {
	uncached := u.InputTokens - u.CacheReadTokens - u.CacheWriteTokens
	return (float64(uncached)*p.Input + float64(u.CacheReadTokens)*p.CacheRead +
		float64(u.CacheWriteTokens)*p.CacheWrite + float64(u.OutputTokens)*p.Output) / 1e6
}

// PriceTable maps a model name, or the start of one, to its price. A model
// takes the price of the longest entry it starts with, so that dated
// releases ("claude-sonnet-4-5-20250929") find their family.
type PriceTable map[string]Price

// DefaultPrices are list prices for common models. They change: pass
// --prices or --price-input/--price-output when yours differ. Anthropic's
// cache rates follow from WithCacheDefaults; OpenAI's differ by model.
var DefaultPrices = PriceTable{
	"claude-opus-4-5":   {Input: 5, Output: 25},
	"claude-opus-4":     {Input: 15, Output: 75},
	"claude-sonnet-4":   {Input: 3, Output: 15},
	"claude-haiku-4-5":  {Input: 1, Output: 5},
	"claude-3-7-sonnet": {Input: 3, Output: 15},
	"claude-3-5-sonnet": {Input: 3, Output: 15},
	"claude-3-5-haiku":  {Input: 0.8, Output: 4},
	"claude-3-opus":     {Input: 15, Output: 75},
	"claude-3-haiku":    {Input: 0.25, Output: 1.25},
	"gpt-5":             {Input: 1.25, Output: 10, CacheRead: 0.125},
	"gpt-5-mini":        {Input: 0.25, Output: 2, CacheRead: 0.025},
	"gpt-5-nano":        {Input: 0.05, Output: 0.4, CacheRead: 0.005},
	"gpt-4.1":           {Input: 2, Output: 8, CacheRead: 0.5},
	"gpt-4.1-mini":      {Input: 0.4, Output: 1.6, CacheRead: 0.1},
	"gpt-4.1-nano":      {Input: 0.1, Output: 0.4, CacheRead: 0.025},
	"gpt-4o":            {Input: 2.5, Output: 10, CacheRead: 1.25},
	"gpt-4o-mini":       {Input: 0.15, Output: 0.6, CacheRead: 0.075},
	"o1":                {Input: 15, Output: 60, CacheRead: 7.5},
	"o3":                {Input: 2, Output: 8, CacheRead: 0.5},
	"o3-mini":           {Input: 1.1, Output: 4.4, CacheRead: 0.55},
	"o4-mini":           {Input: 1.1, Output: 4.4, CacheRead: 0.275},
}

// Lookup returns the price of model.
func (t PriceTable) Lookup(model string) (Price, bool) { return longestPrefix(t, model) }

// longestPrefix returns the value of the longest key model starts with.
func longestPrefix[V any](table map[string]V, model string) (V, bool) {
	best, found := "", false
	for prefix := range table {
		if strings.HasPrefix(model, prefix) && (!found || len(prefix) > len(best)) {
			best, found = prefix, true
		}
	}
	return table[best], found
}

// With returns a copy of t with other's entries added over it.
func (t PriceTable) With(other PriceTable) PriceTable {
	out := make(PriceTable, len(t)+len(other))
	for k, v := range t {
		out[k] = v
	}
	for k, v := range other {
		out[k] = v
	}
	return out
}

// LoadPrices reads a price table from a JSON file:
// {"my-model": {"input": 0.5, "output": 1.5, "cacheRead": 0.05}}, in dollars
// per million tokens.
func LoadPrices(path string) (PriceTable, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var t PriceTable
	if err := json.Unmarshal(data, &t); err != nil {
		return nil, fmt.Errorf("%s: %w (want {\"model\": {\"input\": 3, \"output\": 15}} in dollars per million tokens)", path, err)
	}
	for model, p := range t {
		if p.Input < 0 || p.Output < 0 || p.CacheRead < 0 || p.CacheWrite < 0 {
			return nil, fmt.Errorf("%s: %s: prices cannot be negative", path, model)
		}
	}
	return t, nil
}

// FormatCost writes dollars as the decimal string the status keeps, to a
// millionth of a dollar.
func FormatCost(dollars float64) string {
	s := strconv.FormatFloat(dollars, 'f', 6, 64)
	s = strings.TrimRight(s, "0")
	return strings.TrimSuffix(s, ".")
}
