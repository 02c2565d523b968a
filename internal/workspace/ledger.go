package workspace

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/autoresearch-dev/autoresearch-operator/internal/steps"
	"github.com/autoresearch-dev/autoresearch-operator/internal/text"
)

// Ledger is experiences.md: the experiment's summary and one row per round.
// The Researcher reads it, and appends its strategy to it, every round.
type Ledger struct {
	Metric string
	// Best is the best metric value as a decimal string; "" when there is none.
	Best      string
	BestRound int
	Rounds    int
	MaxRounds int
	// Status is not_started, running, completed, target_reached or stopped_by_user.
	Status string
	// Rows are ordered by round; row 0 is the baseline.
	Rows []LedgerRow
}

// LedgerRow is one round of the experiences table.
type LedgerRow struct {
	Round int
	// Candidate names the candidate of a round of several: a, b, …; its
	// Round cell is "3b".
	Candidate  string
	Compliance string
	Result     string
	Verdict    string
	Strategy   string
	Insight    string
	Note       string
}

// NewLedgerRow is a round's row as the supervisor writes it: its result
// cell is "metric=value", or "—" for a round without a value.
func NewLedgerRow(metric string, r steps.LedgerRound) LedgerRow {
	result := "—"
	if r.Value != "" {
		result = metric + "=" + r.Value
	}
	return LedgerRow{
		Round: int(r.Round), Candidate: r.Candidate, Compliance: r.Compliance, Result: result, Verdict: r.Verdict,
		Strategy: r.Strategy, Insight: r.Insight, Note: r.Note,
	}
}

const statusNotStarted = "not_started"

// summaryKeys maps the summary keys of both layouts to one name each.
var summaryKeys = map[string]string{
	"best": "best", "best result": "best", "best so far": "best",
	"rounds": "rounds", "total rounds": "rounds", "rounds completed": "rounds",
	"max rounds": "max rounds", "max_rounds": "max rounds",
	"status": "status", "metric": "metric",
}

var ledgerColumns = []string{"Round", "Compliance", "Result", "Verdict", "Strategy", "Insight", "Note"}

// cells returns the row's cells in table order.
func (r LedgerRow) cells() []string {
	return []string{strconv.Itoa(r.Round) + r.Candidate, r.Compliance, r.Result, r.Verdict, r.Strategy, r.Insight, r.Note}
}

// field returns the row's cell for a column name, lower-case; nil for none.
func (r *LedgerRow) field(column string) *string {
	switch column {
	case "compliance":
		return &r.Compliance
	case "result":
		return &r.Result
	case "verdict":
		return &r.Verdict
	case "strategy":
		return &r.Strategy
	case "insight":
		return &r.Insight
	case "note", "notes":
		return &r.Note
	}
	return nil
}

// merge overwrites r's cells with src's non-empty ones.
func (r *LedgerRow) merge(src LedgerRow) {
	for _, c := range []string{"compliance", "result", "verdict", "strategy", "insight", "note"} {
		if v := *src.field(c); v != "" {
			*r.field(c) = v
		}
	}
}

// Upsert replaces the row of row.Round and row.Candidate, or adds it in
// round and candidate order.
func (l *Ledger) Upsert(row LedgerRow) {
	i, found := slices.BinarySearchFunc(l.Rows, row, func(r, want LedgerRow) int {
		if r.Round != want.Round {
			return r.Round - want.Round
		}
		return strings.Compare(r.Candidate, want.Candidate)
	})
	if found {
		l.Rows[i] = row
		return
	}
	l.Rows = slices.Insert(l.Rows, i, row)
}

func (l Ledger) hasRound(round int) bool {
	return slices.ContainsFunc(l.Rows, func(r LedgerRow) bool { return r.Round == round })
}

// ReadLedger reads experiences.md in the current layout or in the older one
// (a "## Summary" section with "- Best result:", "- Total rounds:" and
// "- Status:" bullets, and one "## Round N" section per round). Rows that
// appear more than once for a round, as when the Researcher appends its own,
// are merged: later non-empty cells win.
func ReadLedger(path string) (Ledger, error) {
	data, err := ReadRegularFile(path, MaxLedgerBytes)
	if err != nil {
		return Ledger{}, err
	}
	l, err := ParseLedger(data)
	if err != nil {
		return Ledger{}, fmt.Errorf("%s %w", path, err)
	}
	return l, nil
}

// ParseLedger reads the text of experiences.md as ReadLedger does.
func ParseLedger(data []byte) (Ledger, error) {
	l, found := parseLedger(string(data))
	if !found {
		return Ledger{}, errors.New("has no experiences summary or table")
	}
	return l, nil
}

// WriteLedger writes l to path in the current layout, replacing the file at
// once so that a reader never sees half of it.
func WriteLedger(path string, l Ledger) error {
	return WriteFileAtomic(path, []byte(l.header()+"\n"+tableHeader()+renderRows(l.Rows)))
}

// Snippet is the part of the ledger the Researcher's prompt shows: the
// summary lines, the table header, row 0 and the last n other rows.
func (l Ledger) Snippet(n int) string {
	var rows []LedgerRow
	var others []LedgerRow
	for _, r := range l.Rows {
		if r.Round == 0 {
			rows = append(rows, r)
		} else {
			others = append(others, r)
		}
	}
	if n < 0 {
		n = 0
	}
	if len(others) > n {
		others = others[len(others)-n:]
	}
	return l.summary() + "\n" + tableHeader() + renderRows(append(rows, others...))
}

func (l Ledger) header() string {
	return "# Experiences\n\n" + l.summary()
}

func (l Ledger) summary() string {
	best := "none"
	if l.Best != "" {
		best = fmt.Sprintf("%s (R%d)", l.Best, l.BestRound)
		if l.Metric != "" {
			best = l.Metric + " = " + best
		}
	}
	status := l.Status
	if status == "" {
		status = statusNotStarted
	}
	return fmt.Sprintf("best: %s\nrounds: %s\nstatus: %s\n", best, RoundsDone(l.Rounds, l.MaxRounds), status)
}

func tableHeader() string {
	return "| " + strings.Join(ledgerColumns, " | ") + " |\n|" + strings.Repeat("---|", len(ledgerColumns)) + "\n"
}

func renderRows(rows []LedgerRow) string {
	var b strings.Builder
	for _, r := range rows {
		b.WriteString("|")
		for _, c := range r.cells() {
			if c = escapeCell(c); c == "" {
				b.WriteString(" |")
			} else {
				b.WriteString(" " + c + " |")
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}

var newlines = strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ")

// escapeCell keeps a value inside its table cell on one line.
func escapeCell(s string) string {
	return strings.TrimSpace(strings.ReplaceAll(newlines.Replace(s), "|", `\|`))
}

// AppendStrategy is the Researcher's side of the ledger: it appends the
// round's row `| N |  |  |  | strategy |  |  |` to the experiences file at
// path, with the strategy on one line and its pipes escaped. The supervisor
// fills in the other columns.
func AppendStrategy(path string, round int, strategy string) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND, 0)
	if err != nil {
		return fmt.Errorf("experiences: %w", err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return fmt.Errorf("experiences: %w", err)
	}
	row := fmt.Sprintf("| %d |  |  |  | %s |  |  |\n", round, StrategyCell(strategy))
	if size := info.Size(); size > 0 {
		last := make([]byte, 1)
		if _, err := f.ReadAt(last, size-1); err != nil {
			return fmt.Errorf("experiences: %w", err)
		}
		if last[0] != '\n' {
			row = "\n" + row
		}
	}
	if _, err := f.WriteString(row); err != nil {
		return fmt.Errorf("experiences: %w", err)
	}
	return f.Close()
}

// StrategyCell is a strategy as its table cell holds it: one line, with
// white space folded and pipes escaped.
func StrategyCell(s string) string {
	return strings.ReplaceAll(strings.Join(strings.Fields(text.Printable(s)), " "), "|", `\|`)
}

// StrategyFrom returns the strategy recorded for round in the ledger file as
// the Researcher left it: from the last row of that round with a strategy,
// which is the Researcher's appended `| N |  |  |  | strategy |  |  |`.
// It returns "" when there is none or the file cannot be read.
func StrategyFrom(path string, round int) string {
	data, err := ReadRegularFile(path, MaxLedgerBytes)
	if err != nil {
		return ""
	}
	strategy := ""
	for _, r := range parseRows(string(data)) {
		if r.Round == round && r.Strategy != "" {
			strategy = r.Strategy
		}
	}
	return strategy
}

var (
	bulletPrefix   = regexp.MustCompile(`^[-*+]\s+`)
	roundHeading   = regexp.MustCompile(`(?i)^#{2,6}\s*(?:round|r)\s*(\d+)\b(.*)$`)
	headingTitle   = regexp.MustCompile(`^\s*[:—–-]+\s*`)
	anyHeading     = regexp.MustCompile(`^#{1,6}\s`)
	numberPattern  = regexp.MustCompile(`[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?`)
	bestRoundMark  = regexp.MustCompile(`(?i)\(\s*(?:r|round)\s*(\d+)\s*\)|\bround\s*(\d+)\b`)
	roundsPattern  = regexp.MustCompile(`^(\d+)(?:\s*(?:/|of)\s*(\d+))?`)
	statusPattern  = regexp.MustCompile(`[a-z_]+`)
	resultMetric   = regexp.MustCompile(`^([A-Za-z_][\w.\-/]*)\s*[=:]`)
	separatorCell  = regexp.MustCompile(`^:?-+:?$`)
	roundCellValue = regexp.MustCompile(`(?i)^(?:r|round)?\s*(\d+)([a-p])?$`)
)

// parseLedger reads both layouts; found is false when the text has neither a
// summary line nor a round.
func parseLedger(text string) (l Ledger, found bool) {
	seen := map[string]bool{}
	inRound := false
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if roundHeading.MatchString(line) {
			inRound = true
			continue
		}
		if anyHeading.MatchString(line) {
			inRound = false
			continue
		}
		key, value, ok := keyValue(line)
		if inRound || !ok {
			continue
		}
		key = summaryKeys[key]
		if key == "" || seen[key] {
			continue
		}
		seen[key] = true
		switch key {
		case "best":
			var metric string
			metric, l.Best, l.BestRound = parseBest(value)
			if metric != "" {
				l.Metric = metric
			}
		case "rounds":
			if m := roundsPattern.FindStringSubmatch(value); m != nil {
				l.Rounds, _ = strconv.Atoi(m[1])
				if m[2] != "" {
					l.MaxRounds, _ = strconv.Atoi(m[2])
				}
			}
		case "max rounds":
			if m := roundsPattern.FindStringSubmatch(value); m != nil {
				l.MaxRounds, _ = strconv.Atoi(m[1])
			}
		case "status":
			l.Status = statusPattern.FindString(strings.ToLower(value))
		case "metric":
			if l.Metric == "" {
				l.Metric = value
			}
		}
		found = true
	}
	for _, r := range parseRows(text) {
		found = true
		i := slices.IndexFunc(l.Rows, func(have LedgerRow) bool { return have.Round == r.Round && have.Candidate == r.Candidate })
		if i < 0 {
			l.Upsert(r)
			continue
		}
		l.Rows[i].merge(r)
	}
	if l.Metric == "" {
		for _, r := range l.Rows {
			if m := resultMetric.FindStringSubmatch(r.Result); m != nil {
				l.Metric = m[1]
				break
			}
		}
	}
	return l, found
}

// keyValue reads a "key: value" line, bulleted or not, with Markdown bold
// around the key allowed. Keys are lower-cased.
func keyValue(line string) (key, value string, ok bool) {
	line = bulletPrefix.ReplaceAllString(strings.TrimSpace(line), "")
	if strings.HasPrefix(line, "|") || strings.HasPrefix(line, "#") {
		return "", "", false
	}
	key, value, ok = strings.Cut(line, ":")
	if !ok {
		return "", "", false
	}
	key = strings.ToLower(strings.TrimSpace(strings.ReplaceAll(key, "*", "")))
	value = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(value), "**"))
	return key, value, true
}

// parseBest reads "val_bpb = 0.991 (R3)", "0.991 (Round 3)" or "none".
func parseBest(value string) (metric, best string, round int) {
	rest := value
	if name, after, ok := strings.Cut(value, "="); ok {
		metric, rest = strings.TrimSpace(name), after
	}
	best = numberPattern.FindString(rest)
	if best == "" {
		return metric, "", 0
	}
	if m := bestRoundMark.FindStringSubmatch(rest); m != nil {
		round, _ = strconv.Atoi(m[1] + m[2])
	}
	return metric, best, round
}

// parseRows returns every round found, in file order and unmerged: table
// rows of the current layout and "## Round N" sections of the older one.
func parseRows(text string) []LedgerRow {
	var rows []LedgerRow
	// Until a header row says otherwise, cells are in the current layout's order.
	columns := make([]string, len(ledgerColumns))
	for i, c := range ledgerColumns {
		columns[i] = strings.ToLower(c)
	}
	section := -1 // index into rows of the older layout's open round section
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if m := roundHeading.FindStringSubmatch(line); m != nil {
			n, _ := strconv.Atoi(m[1])
			row := LedgerRow{Round: n}
			// "## Round 3: cosine lr" names the strategy in the heading.
			if loc := headingTitle.FindStringIndex(m[2]); loc != nil {
				row.Strategy = strings.TrimSpace(m[2][loc[1]:])
			}
			rows = append(rows, row)
			section = len(rows) - 1
			continue
		}
		if anyHeading.MatchString(line) {
			section = -1
			continue
		}
		if strings.HasPrefix(line, "|") {
			section = -1
			cells := splitCells(line)
			if len(cells) == 0 {
				continue
			}
			if strings.EqualFold(cells[0], "round") {
				columns = make([]string, len(cells))
				for i, c := range cells {
					columns[i] = strings.ToLower(c)
				}
				continue
			}
			m := roundCellValue.FindStringSubmatch(cells[0])
			if m == nil {
				continue // the separator row, or a table that is not ours
			}
			row := LedgerRow{Candidate: strings.ToLower(m[2])}
			row.Round, _ = strconv.Atoi(m[1])
			for i, c := range cells {
				if i < len(columns) {
					if f := row.field(columns[i]); f != nil {
						*f = c
					}
				}
			}
			rows = append(rows, row)
			continue
		}
		if section >= 0 {
			if key, value, ok := keyValue(line); ok {
				if f := rows[section].field(key); f != nil {
					*f = value
				}
			}
		}
	}
	return rows
}

// splitCells splits a Markdown table row on unescaped "|" and unescapes the
// cells; a separator row yields nothing.
func splitCells(line string) []string {
	var cells []string
	var cur strings.Builder
	for i := 0; i < len(line); i++ {
		switch {
		case line[i] == '\\' && i+1 < len(line) && line[i+1] == '|':
			cur.WriteByte('|')
			i++
		case line[i] == '|':
			cells = append(cells, strings.TrimSpace(cur.String()))
			cur.Reset()
		default:
			cur.WriteByte(line[i])
		}
	}
	// The text after the closing "|" is not a cell; without a closing "|",
	// the last cell still is.
	if last := strings.TrimSpace(cur.String()); last != "" {
		cells = append(cells, last)
	}
	if len(cells) > 0 && strings.HasPrefix(line, "|") {
		cells = cells[1:]
	}
	separator := len(cells) > 0
	for _, c := range cells {
		separator = separator && separatorCell.MatchString(c)
	}
	if separator {
		return nil
	}
	return cells
}

// WriteFileAtomic replaces path with data through a temporary file in the
// same directory, so that an interruption leaves the old file or the new one.
func WriteFileAtomic(path string, data []byte) error {
	mode := fs.FileMode(0o644)
	if info, err := os.Stat(path); err == nil {
		mode = info.Mode().Perm()
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	// After the rename there is nothing left to remove; before it, a
	// temporary file that cannot be removed is not worth more than the error
	// already returned.
	defer func() { _ = os.Remove(tmp.Name()) }()
	if _, err := tmp.Write(data); err != nil {
		return errors.Join(err, tmp.Close())
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp.Name(), mode); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// RoundsDone is "3 / 20", or "3 (maxRounds lowered to 2)" once maxRounds
// was lowered below the rounds done.
func RoundsDone(done, maxRounds int) string {
	if done > maxRounds {
		return fmt.Sprintf("%d (maxRounds lowered to %d)", done, maxRounds)
	}
	return fmt.Sprintf("%d / %d", done, maxRounds)
}
