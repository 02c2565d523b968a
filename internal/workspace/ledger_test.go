package workspace

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// currentLedger is testdata/experiences_current.md as ReadLedger sees it.
var currentLedger = Ledger{
	Metric: "val_bpb", Best: "0.991", BestRound: 3, Rounds: 3, MaxRounds: 10, Status: "running",
	Rows: []LedgerRow{
		{Round: 0, Compliance: "✅", Result: "val_bpb=1.020", Verdict: "baseline", Strategy: "baseline", Insight: "unmodified code"},
		{Round: 1, Compliance: "✅", Result: "val_bpb=0.991", Verdict: "improved", Strategy: "cosine lr", Insight: "warmup helps | decay too"},
		{Round: 2, Compliance: "❌ files: touched prepare.py", Verdict: "compliance_failed", Strategy: "cache the data", Insight: "modified fixed file prepare.py", Note: "try the optimizer next"},
		// The Researcher's row and the supervisor's for round 3, merged.
		{Round: 3, Compliance: "✅", Result: "val_bpb=0.995", Verdict: "not_improved", Strategy: "wider MLP", Insight: "too slow per step"},
	},
}

func TestReadLedger(t *testing.T) {
	cases := map[string]Ledger{
		"experiences_current.md": currentLedger,
		"experiences_old.md": {
			Metric: "val_loss", Best: "1.4821", BestRound: 2, Rounds: 3, MaxRounds: 5, Status: "running",
			Rows: []LedgerRow{
				{Round: 0, Result: "val_loss=1.5310", Verdict: "baseline", Strategy: "baseline", Insight: "unmodified code"},
				{Round: 1, Compliance: "✅", Result: "val_loss=1.5102", Verdict: "improved", Strategy: "label smoothing 0.1", Insight: "smoother targets generalise better"},
				{Round: 2, Result: "val_loss = 1.4821", Verdict: "improved", Strategy: "dropout 0.2", Insight: "less overfitting", Note: "keep the batch size"},
				{Round: 3, Verdict: "not_improved", Strategy: "bigger batch"},
			},
		},
	}
	for file, want := range cases {
		t.Run(file, func(t *testing.T) {
			got, err := ReadLedger(filepath.Join("testdata", file))
			if err != nil {
				t.Fatalf("ReadLedger: %v", err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("ReadLedger (-want +got):\n%s", diff)
			}
		})
	}
}

func TestReadLedgerErrors(t *testing.T) {
	dir := t.TempDir()
	notLedger := filepath.Join(dir, "notes.md")
	if err := os.WriteFile(notLedger, []byte("# Notes\n\nnothing here\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		path string
		want string
	}{
		"missing":      {path: filepath.Join(dir, "missing.md"), want: "no such file"},
		"not a ledger": {path: notLedger, want: "has no experiences summary or table"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := ReadLedger(tc.path); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("ReadLedger error = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestWriteLedger(t *testing.T) {
	cases := map[string]struct {
		ledger Ledger
		want   string
		// reread is what ReadLedger returns; the written ledger when nil.
		reread *Ledger
	}{
		"best and rows": {
			ledger: Ledger{
				Metric: "val_bpb", Best: "0.991", BestRound: 1, Rounds: 1, MaxRounds: 10, Status: "running",
				Rows: []LedgerRow{
					{Round: 0, Compliance: "✅", Result: "val_bpb=1.020", Verdict: "baseline", Strategy: "baseline", Insight: "unmodified code"},
					{Round: 1, Compliance: "✅", Result: "val_bpb=0.991", Verdict: "improved", Strategy: "cosine lr", Insight: "a | b"},
				},
			},
			want: "# Experiences\n\nbest: val_bpb = 0.991 (R1)\nrounds: 1 / 10\nstatus: running\n\n" +
				"| Round | Compliance | Result | Verdict | Strategy | Insight | Note |\n|---|---|---|---|---|---|---|\n" +
				"| 0 | ✅ | val_bpb=1.020 | baseline | baseline | unmodified code | |\n" +
				"| 1 | ✅ | val_bpb=0.991 | improved | cosine lr | a \\| b | |\n",
		},
		"no best yet, newlines folded": {
			ledger: Ledger{
				Metric: "acc", MaxRounds: 3,
				Rows: []LedgerRow{{Round: 0, Strategy: "baseline", Insight: "line one\nline two\r\n", Note: `path\|x`}},
			},
			want: "# Experiences\n\nbest: none\nrounds: 0 / 3\nstatus: not_started\n\n" +
				"| Round | Compliance | Result | Verdict | Strategy | Insight | Note |\n|---|---|---|---|---|---|---|\n" +
				"| 0 | | | | baseline | line one line two | path\\\\|x |\n",
			reread: &Ledger{
				MaxRounds: 3, Status: "not_started",
				Rows: []LedgerRow{{Round: 0, Strategy: "baseline", Insight: "line one line two", Note: `path\|x`}},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "experiences.md")
			if err := WriteLedger(path, tc.ledger); err != nil {
				t.Fatalf("WriteLedger: %v", err)
			}
			if diff := cmp.Diff(tc.want, readFile(t, path)); diff != "" {
				t.Errorf("written file (-want +got):\n%s", diff)
			}
			want := tc.ledger
			if tc.reread != nil {
				want = *tc.reread
			}
			got, err := ReadLedger(path)
			if err != nil {
				t.Fatalf("ReadLedger: %v", err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("read back (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSnippet(t *testing.T) {
	header := "best: val_bpb = 0.991 (R3)\nrounds: 3 / 10\nstatus: running\n\n" +
		"| Round | Compliance | Result | Verdict | Strategy | Insight | Note |\n|---|---|---|---|---|---|---|\n" +
		"| 0 | ✅ | val_bpb=1.020 | baseline | baseline | unmodified code | |\n"
	cases := map[int]string{
		0: header,
		2: header +
			"| 2 | ❌ files: touched prepare.py | | compliance_failed | cache the data | modified fixed file prepare.py | try the optimizer next |\n" +
			"| 3 | ✅ | val_bpb=0.995 | not_improved | wider MLP | too slow per step | |\n",
		9: header +
			"| 1 | ✅ | val_bpb=0.991 | improved | cosine lr | warmup helps \\| decay too | |\n" +
			"| 2 | ❌ files: touched prepare.py | | compliance_failed | cache the data | modified fixed file prepare.py | try the optimizer next |\n" +
			"| 3 | ✅ | val_bpb=0.995 | not_improved | wider MLP | too slow per step | |\n",
	}
	for n, want := range cases {
		if diff := cmp.Diff(want, currentLedger.Snippet(n)); diff != "" {
			t.Errorf("Snippet(%d) (-want +got):\n%s", n, diff)
		}
	}
}

func TestUpsert(t *testing.T) {
	rows := func(rounds ...int) []LedgerRow {
		var r []LedgerRow
		for _, n := range rounds {
			r = append(r, LedgerRow{Round: n})
		}
		return r
	}
	cases := map[string]struct {
		rows []LedgerRow
		row  LedgerRow
		want []LedgerRow
	}{
		"empty": {row: LedgerRow{Round: 0}, want: rows(0)},
		"append": {
			rows: rows(0, 1), row: LedgerRow{Round: 2, Strategy: "s"},
			want: append(rows(0, 1), LedgerRow{Round: 2, Strategy: "s"}),
		},
		"insert in order": {
			rows: rows(0, 3), row: LedgerRow{Round: 2},
			want: rows(0, 2, 3),
		},
		"replace": {
			rows: []LedgerRow{{Round: 0}, {Round: 1, Strategy: "old", Note: "n"}},
			row:  LedgerRow{Round: 1, Strategy: "new"},
			want: []LedgerRow{{Round: 0}, {Round: 1, Strategy: "new"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			l := Ledger{Rows: tc.rows}
			l.Upsert(tc.row)
			if diff := cmp.Diff(tc.want, l.Rows); diff != "" {
				t.Errorf("Upsert (-want +got):\n%s", diff)
			}
		})
	}
}

func TestStrategyFrom(t *testing.T) {
	cases := map[string]struct {
		file  string
		round int
		want  string
	}{
		"Researcher's appended row":     {file: "experiences_current.md", round: 3, want: "wider MLP"},
		"finished round":                {file: "experiences_current.md", round: 1, want: "cosine lr"},
		"round without a row":           {file: "experiences_current.md", round: 4, want: ""},
		"older layout section":          {file: "experiences_old.md", round: 1, want: "label smoothing 0.1"},
		"older layout heading strategy": {file: "experiences_old.md", round: 2, want: "dropout 0.2"},
		"missing file":                  {file: "missing.md", round: 1, want: ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := StrategyFrom(filepath.Join("testdata", tc.file), tc.round); got != tc.want {
				t.Errorf("StrategyFrom(%s, %d) = %q, want %q", tc.file, tc.round, got, tc.want)
			}
		})
	}
}

func TestStrategyFromLastRow(t *testing.T) {
	path := filepath.Join(t.TempDir(), "experiences.md")
	l := Ledger{Metric: "m", Rows: []LedgerRow{{Round: 0, Strategy: "baseline"}, {Round: 1, Strategy: "planned by the supervisor"}}}
	if err := WriteLedger(path, l); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	// A Researcher may leave out the trailing pipe and the empty cells.
	if _, err := f.WriteString("| 1 |  |  |  | label smoothing \\| mixup\n"); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if got := StrategyFrom(path, 1); got != "label smoothing | mixup" {
		t.Errorf("StrategyFrom = %q, want the appended row's strategy", got)
	}
}

func TestRoundsDone(t *testing.T) {
	for _, tc := range []struct {
		done, max int
		want      string
	}{
		{3, 20, "3 / 20"},
		{20, 20, "20 / 20"},
		{3, 2, "3 (maxRounds lowered to 2)"},
	} {
		if got := RoundsDone(tc.done, tc.max); got != tc.want {
			t.Errorf("RoundsDone(%d, %d) = %q, want %q", tc.done, tc.max, got, tc.want)
		}
	}
}
