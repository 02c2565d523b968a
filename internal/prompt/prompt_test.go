package prompt

import (
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

const experiences = `status: running | rounds: 2 | best: val_bpb=0.991200 (round 2) | baseline: 0.997900

| Round | Compliance | Result | Verdict | Strategy | Insight | Note |
|---|---|---|---|---|---|---|
| 1 | ✅ | 0.995000 | improved | cosine lr schedule | smoother decay helped |  |
| 2 | ✅ | 0.991200 | improved | label smoothing 0.1 | less overconfident early on |  |
`

// baseData is a complete round-3 request without any optional part.
func baseData() Data {
	return Data{
		Metric:          "val_bpb",
		Direction:       "minimize",
		Round:           3,
		MaxRounds:       10,
		FixedFiles:      []string{"prepare.py", "eval.py"},
		VariableFiles:   []string{"train.py"},
		RecentRounds:    5,
		Experiences:     experiences,
		ExperiencesPath: "experiences.md",
	}
}

func TestRenderGolden(t *testing.T) {
	cases := map[string]func(d *Data){
		"plain": func(d *Data) {
			d.ResearchQuestion = "Can a 5-minute GPT run reach a lower val_bpb by changing only train.py?"
			d.VariableRange = "architecture, optimizer, hyperparameters, training loop"
			d.TimeLimit = "5m0s"
		},
		"profile": func(d *Data) {
			d.ProfileCommand = "python profile.py --steps 20"
			d.VariableFiles = []string{"kernels/attention.py", "kernels/mlp.py"}
			d.TimeLimit = "10m0s"
			d.EpochLimit = 3
			d.FixedRegions = []string{"kernels/attention.py lines 3-9: `# autoresearch:fixed-begin reference shapes`", " "}
			d.Constraints = []string{"Random seed: 42 (set in train.py)", " ", "Data split: 90/10,\n  see prepare.py"}
		},
		"guidance": func(d *Data) {
			d.TimeLimit = "5m0s"
			d.Guidance = []string{
				"Try a larger learning rate with longer warmup.",
				"  ",
				"Keep the model under 50M parameters.\nMemory is tight on this GPU.",
			}
		},
		"empty_experiences": func(d *Data) {
			d.Round = 1
			d.FixedFiles = nil
			d.RecentRounds = 0
			d.Experiences = ""
			d.EpochLimit = 1
		},
	}
	for name, mutate := range cases {
		t.Run(name, func(t *testing.T) {
			d := baseData()
			mutate(&d)
			got, err := Render(d)
			if err != nil {
				t.Fatalf("Render() error = %v", err)
			}
			golden := filepath.Join("testdata", name+".golden")
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("reading golden file (run with -update to create it): %v", err)
			}
			if diff := cmp.Diff(string(want), got); diff != "" {
				t.Errorf("Render() mismatch with %s (-want +got):\n%s", golden, diff)
			}
		})
	}
}

func TestRenderProfileDiscipline(t *testing.T) {
	cases := map[string]struct {
		profileCommand string
		wantSection    bool
		wantSteps      []string
	}{
		"off": {
			wantSteps: []string{
				"1. Read the variable files listed above to understand current code",
				"2. Based on experiences, design a strategy for this round",
				"3. Add a row to experiences.md with your strategy",
				"4. Modify the variable files to implement your strategy",
				`5. Report "Code ready" as your final message`,
			},
		},
		"on": {
			profileCommand: "nsys profile python train.py",
			wantSection:    true,
			wantSteps: []string{
				"1. Run `nsys profile python train.py`, save profile + analysis (see Profile-first discipline above).",
				"2. Read the variable files listed above to understand current code",
				"3. Based on experiences and profile analysis, design a strategy for this round",
				"4. Add a row to experiences.md with your strategy",
				"5. Modify the variable files to implement your strategy",
				`6. Report "Code ready" as your final message`,
			},
		},
		"blank command is off": {
			profileCommand: "  ",
			wantSteps: []string{
				"1. Read the variable files listed above to understand current code",
				"2. Based on experiences, design a strategy for this round",
				"3. Add a row to experiences.md with your strategy",
				"4. Modify the variable files to implement your strategy",
				`5. Report "Code ready" as your final message`,
			},
		},
	}
	stepLine := regexp.MustCompile(`(?m)^\d+\. .*$`)
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d := baseData()
			d.ProfileCommand = tc.profileCommand
			got, err := Render(d)
			if err != nil {
				t.Fatalf("Render() error = %v", err)
			}
			for _, marker := range []string{"## Profile-first discipline", "profiles/round-3-before.md", "profiles/round-3-analysis.md"} {
				if has := strings.Contains(got, marker); has != tc.wantSection {
					t.Errorf("prompt contains %q = %v, want %v", marker, has, tc.wantSection)
				}
			}
			_, task, found := strings.Cut(got, "## Your task\n")
			if !found {
				t.Fatalf("prompt has no task section:\n%s", got)
			}
			steps := stepLine.FindAllString(task, -1)
			if len(steps) != len(tc.wantSteps) {
				t.Fatalf("task has steps %q, want %d steps", steps, len(tc.wantSteps))
			}
			for i, want := range tc.wantSteps {
				if !strings.HasPrefix(steps[i], want) {
					t.Errorf("step %d = %q, want it to start with %q", i+1, steps[i], want)
				}
			}
		})
	}
}

func TestRenderOptionalParts(t *testing.T) {
	cases := map[string]struct {
		mutate      func(d *Data)
		wantPresent []string
		wantAbsent  []string
	}{
		"nothing optional": {
			mutate: func(*Data) {},
			wantPresent: []string{
				"**Variable range:** (not specified)\n",
				"## Recent experiences (last 5 rounds)\n",
			},
			wantAbsent: []string{"Research question:", "## Guidance", "time limit", "epoch", "Profile-first", "Fixed conditions"},
		},
		"research question": {
			mutate: func(d *Data) { d.ResearchQuestion = "  Does muon beat AdamW here?\n" },
			wantPresent: []string{
				"This is Round 3 of 10.\n\nResearch question: Does muon beat AdamW here?\n\n## Your role\n",
			},
		},
		"only blank constraints": {
			mutate:     func(d *Data) { d.Constraints = []string{"", " \n "} },
			wantAbsent: []string{"Fixed conditions"},
		},
		"only blank guidance": {
			mutate:     func(d *Data) { d.Guidance = []string{"", " \n "} },
			wantAbsent: []string{"## Guidance"},
		},
		"time limit only": {
			mutate: func(d *Data) { d.TimeLimit = "5m0s" },
			wantPresent: []string{
				"- Training runs under a time limit of 5m0s. This limit is fixed; your changes must work within it.\n",
			},
			wantAbsent: []string{"epoch"},
		},
		"epoch limit only": {
			mutate: func(d *Data) { d.EpochLimit = 2 },
			wantPresent: []string{
				"- Training runs for at most 2 epochs. This limit is fixed; your changes must work within it.\n",
			},
			wantAbsent: []string{"time limit"},
		},
		"one recent round": {
			mutate:      func(d *Data) { d.RecentRounds = 1 },
			wantPresent: []string{"## Recent experiences (last 1 round)\n"},
		},
		"custom experiences path": {
			mutate: func(d *Data) {
				d.ExperiencesPath = "research/experiences.md"
				d.ProfileCommand = "python profile.py"
			},
			wantPresent: []string{
				"The Strategy you append to research/experiences.md MUST cite",
				"4. Add a row to research/experiences.md with your strategy (leave Result/Verdict/Insight blank).",
				"   `| 3 |  |  |  | <your strategy> |  |  |`\n",
			},
		},
		"blank file names are dropped": {
			mutate: func(d *Data) {
				d.FixedFiles = []string{" ", "prepare.py"}
				d.VariableFiles = []string{"train.py", "", "model.py"}
			},
			wantPresent: []string{
				"- **Fixed files (do not modify):** `prepare.py`\n",
				"- **Variable files (you may modify):** `train.py`, `model.py`\n",
			},
		},
		"seed remarks for the template author are never printed": {
			mutate:     func(d *Data) { d.ProfileCommand = "python profile.py" },
			wantAbsent: []string{"only include this section", "If perf-mode is off", "{", "}"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d := baseData()
			d.Experiences = "(experiences)"
			tc.mutate(&d)
			got, err := Render(d)
			if err != nil {
				t.Fatalf("Render() error = %v", err)
			}
			for _, s := range tc.wantPresent {
				if !strings.Contains(got, s) {
					t.Errorf("prompt does not contain %q:\n%s", s, got)
				}
			}
			for _, s := range tc.wantAbsent {
				if strings.Contains(got, s) {
					t.Errorf("prompt contains %q:\n%s", s, got)
				}
			}
		})
	}
}

func TestRenderErrors(t *testing.T) {
	cases := map[string]struct {
		mutate  func(d *Data)
		wantErr []string
	}{
		"missing metric": {
			mutate:  func(d *Data) { d.Metric = " " },
			wantErr: []string{"metric is required"},
		},
		"missing direction": {
			mutate:  func(d *Data) { d.Direction = "" },
			wantErr: []string{"direction is required"},
		},
		"round zero": {
			mutate:  func(d *Data) { d.Round = 0 },
			wantErr: []string{"round must be at least 1, got 0"},
		},
		"max rounds zero": {
			mutate:  func(d *Data) { d.MaxRounds = 0 },
			wantErr: []string{"maxRounds must be at least 1, got 0"},
		},
		"round beyond max rounds": {
			mutate:  func(d *Data) { d.Round = 11 },
			wantErr: []string{"round 11 is beyond maxRounds 10"},
		},
		"no variable files": {
			mutate:  func(d *Data) { d.VariableFiles = nil },
			wantErr: []string{"at least one variable file is required"},
		},
		"only blank variable files": {
			mutate:  func(d *Data) { d.VariableFiles = []string{""} },
			wantErr: []string{"at least one variable file is required"},
		},
		"missing experiences path": {
			mutate:  func(d *Data) { d.ExperiencesPath = "" },
			wantErr: []string{"experiences path is required"},
		},
		"negative epoch limit": {
			mutate:  func(d *Data) { d.EpochLimit = -1 },
			wantErr: []string{"epoch limit must not be negative, got -1"},
		},
		"every problem is reported": {
			mutate: func(d *Data) { *d = Data{} },
			wantErr: []string{
				"metric is required",
				"direction is required",
				"round must be at least 1",
				"maxRounds must be at least 1",
				"at least one variable file is required",
				"experiences path is required",
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d := baseData()
			tc.mutate(&d)
			got, err := Render(d)
			if err == nil {
				t.Fatalf("Render() error = nil, want an error; prompt:\n%s", got)
			}
			if got != "" {
				t.Errorf("Render() returned a prompt with an error:\n%s", got)
			}
			for _, want := range tc.wantErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("Render() error = %q, want it to contain %q", err, want)
				}
			}
		})
	}
}
