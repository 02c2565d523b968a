package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
	"github.com/autoresearch-dev/autoresearch-operator/internal/readout"
	"github.com/autoresearch-dev/autoresearch-operator/internal/report"
	"github.com/autoresearch-dev/autoresearch-operator/internal/steps"
	"github.com/autoresearch-dev/autoresearch-operator/internal/supervisor"
	"github.com/autoresearch-dev/autoresearch-operator/internal/text"
	"github.com/autoresearch-dev/autoresearch-operator/internal/workspace"
)

// Paths on the workspace volume, relative to it, as the reader pod reads
// them.
func volumePath(p string) string { return strings.TrimPrefix(p, steps.WorkspaceMount+"/") }

// experimentDir is the experiment directory of ar's worktree on the volume.
func experimentDir(ar *v1alpha1.AutoResearch) string {
	return path.Join(volumePath(steps.WorktreeDir), string(ar.Spec.Source.Subdir))
}

// roundFlag is the --round flag of the commands about one round.
type roundFlag struct{ round int32 }

func (f *roundFlag) register(cmd *cobra.Command) {
	cmd.Flags().Int32Var(&f.round, "round", -1, "the round (0 is the baseline)")
	_ = cmd.MarkFlagRequired("round")
}

// candidateFlag is the --candidate flag of the commands about one round:
// the candidate of a round of several, a to p.
type candidateFlag struct{ name string }

func (f *candidateFlag) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.name, "candidate", "", "the candidate (a, b, …) of a round of several (spec.candidates)")
}

// valid refuses a name no candidate has.
func (f candidateFlag) valid() error {
	if f.name != "" && (len(f.name) != 1 || f.name[0] < 'a' || f.name[0] > 'p') {
		return fmt.Errorf("--candidate %q: name a candidate by its letter, a to p", f.name)
	}
	return nil
}

// check refuses no name for a round of several, which has no log or
// change of its own, only its candidates'.
func (f candidateFlag) check(ar *v1alpha1.AutoResearch, round int32) error {
	if f.name == "" && round > 0 && ar.Spec.Candidates > 1 {
		return fmt.Errorf("%s tries %d candidates a round: name one with --candidate a, b, …", ar.Name, ar.Spec.Candidates)
	}
	return nil
}

// check refuses a round the experiment has not reached.
func (f roundFlag) check(ar *v1alpha1.AutoResearch) error {
	if f.round < 0 {
		return fmt.Errorf("--round %d: rounds count from 0, the baseline", f.round)
	}
	if f.round > ar.Status.Round {
		return fmt.Errorf("round %d not found: %s is at round %d", f.round, ar.Name, ar.Status.Round)
	}
	return nil
}

func newLogsCommand(c *cluster) *cobra.Command {
	var (
		rf   roundFlag
		cf   candidateFlag
		step string
	)
	cmd := &cobra.Command{
		Use:   "logs NAME --round N [--candidate a] [--step train|eval|researcher|compliance|git]",
		Short: "Print a step's log: training's and evaluation's from the workspace volume, the others' from their pods",
		Args:  exactlyName,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if step == "" || strings.ContainsAny(step, `/\`) || step == "." || step == ".." {
				return fmt.Errorf("--step %q: name a step, such as train, eval or researcher", step)
			}
			if err := cf.valid(); err != nil {
				return err
			}
			ar, err := c.experiment(ctx, args[0])
			if err != nil {
				return err
			}
			if err := rf.check(ar); err != nil {
				return err
			}
			// The git step is the round's, whatever its candidates.
			if step != "git" {
				if err := cf.check(ar, rf.round); err != nil {
					return err
				}
			}
			logPath := steps.LogPath(rf.round, path.Join(cf.name, step))
			logDir := volumePath(path.Dir(logPath))
			entries, err := c.read(ctx, ar, readout.Request{Items: []readout.Item{
				{Name: "log", File: volumePath(logPath)},
				{Name: "round", List: logDir},
			}})
			if err != nil {
				return err
			}
			// Logs and diffs are the Researcher's and its code's text: their
			// escape sequences are written out, not sent to the terminal.
			data, err := entries.Get("log")
			if err == nil {
				_, err = io.WriteString(cmd.OutOrStdout(), text.Visible(string(data)))
				return err
			}
			var missing *readout.ItemError
			if !errors.As(err, &missing) || !missing.Missing {
				return err
			}
			// The Researcher, the file check and the git step log to
			// their pods only.
			pod := fmt.Sprintf("%s-r%d%s-%s", ar.Name, rf.round, cf.name, step)
			stream, perr := c.clientset.CoreV1().Pods(ar.Namespace).GetLogs(pod, &corev1.PodLogOptions{Container: step}).Stream(ctx)
			if perr == nil {
				defer stream.Close()
				fmt.Fprintf(cmd.ErrOrStderr(), "The %s step keeps no log on the workspace; this is its pod %s's log.\n", step, pod)
				out := text.NewVisibleWriter(cmd.OutOrStdout())
				if _, err = io.Copy(out, stream); err != nil {
					return err
				}
				return out.Flush()
			}
			return fmt.Errorf("round %d of %s has no %s log: %s", rf.round, ar.Name, step, roundLogs(entries))
		},
	}
	rf.register(cmd)
	cf.register(cmd)
	cmd.Flags().StringVar(&step, "step", steps.StepTrain, "the step: train, eval (train-N and eval-N for the baseline's repeated runs), researcher, compliance, git")
	return cmd
}

// roundLogs says which logs a round's directory on the volume holds.
func roundLogs(entries readout.Entries) string {
	list, err := entries.Get("round")
	if err != nil {
		return "it has no logs on the workspace yet"
	}
	var names []string
	for _, n := range strings.Fields(string(list)) {
		if s, ok := strings.CutSuffix(n, ".log"); ok {
			names = append(names, text.Visible(s))
		}
	}
	slices.Sort(names)
	return "the workspace has its logs of " + strings.Join(names, ", ")
}

func newReportCommand(c *cluster) *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   "report NAME [-o DIR]",
		Short: "Write the research report: progress.png/.svg, report.md, a self-contained report.html and results.json",
		Args:  exactlyName,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			ar, err := c.experiment(ctx, args[0])
			if err != nil {
				return err
			}
			req, ranges := reportRequest(ar)
			entries, err := c.read(ctx, ar, req)
			if err != nil {
				return err
			}
			data, err := entries.Get("ledger")
			var missing *readout.ItemError
			if errors.As(err, &missing) && missing.Missing {
				// The experiment ran under an operator that did not
				// publish its ledger yet.
				data, err = entries.Get("ledger-worktree")
			}
			if err != nil {
				return fmt.Errorf("reading the ledger of %s: %w", ar.Name, err)
			}
			ledger, err := workspace.ParseLedger(data)
			if err != nil {
				return fmt.Errorf("the ledger of %s: %w", ar.Name, err)
			}
			diffs := map[int32]string{}
			for _, r := range ranges {
				d, err := entries.Get(diffName(r.Round))
				if err != nil {
					return fmt.Errorf("diff of round %d: %w", r.Round, err)
				}
				diffs[r.Round] = strings.TrimSpace(string(d))
			}
			r := report.Build(report.Input{Name: ar.Name, Spec: ar.Spec, Status: ar.Status, Ledger: ledger, Diffs: diffs})
			if dir == "" {
				dir = ar.Name + "-report"
			}
			paths, err := r.Write(dir)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Wrote the report of %s to %s:\n", ar.Name, dir)
			for _, p := range paths {
				fmt.Fprintf(cmd.OutOrStdout(), "  %s\n", filepath.Base(p))
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&dir, "output-dir", "o", "", "the directory to write the report into (default: NAME-report)")
	return cmd
}

// reportRequest reads the ledger and the diff of every kept round, as the
// local report has them: the ledger as the supervisor published it, not the
// worktree's, which a running Researcher may have rewritten.
func reportRequest(ar *v1alpha1.AutoResearch) (readout.Request, []report.KeptRange) {
	req := readout.Request{Items: []readout.Item{
		{Name: "ledger", File: volumePath(supervisor.PublishedLedger(steps.StateDir, workspace.ExperiencesFile))},
		{Name: "ledger-worktree", File: path.Join(experimentDir(ar), workspace.ExperiencesFile)},
	}}
	var ranges []report.KeptRange
	if files := v1alpha1.Strings(ar.Spec.Variable.Files); len(files) > 0 {
		ranges = report.KeptRanges(ar.Status)
		for _, r := range ranges {
			req.Items = append(req.Items, readout.Item{Name: diffName(r.Round), Diff: &readout.Diff{GitDir: volumePath(steps.GitDir), Subdir: string(ar.Spec.Source.Subdir), From: r.From, To: r.To, Files: files}})
		}
	}
	return req, ranges
}

func diffName(round int32) string { return "diff-r" + strconv.Itoa(int(round)) }

func newExportCommand(c *cluster) *cobra.Command {
	var (
		out        string
		candidates bool
		force      bool
	)
	cmd := &cobra.Command{
		Use:   "export NAME -o FILE.bundle [--candidates]",
		Short: "Write the experiment branch, with its code and ledger, to a git bundle that git clone reads",
		Args:  exactlyName,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if out == "" {
				return errors.New("-o FILE.bundle is required: the file to write the bundle to")
			}
			if _, err := os.Stat(out); err == nil && !force {
				return fmt.Errorf("%s exists: choose another file, or pass --force to overwrite it", out)
			}
			ar, err := c.experiment(ctx, args[0])
			if err != nil {
				return err
			}
			entries, err := c.read(ctx, ar, readout.Request{Items: []readout.Item{{Name: "bundle", Bundle: &readout.Bundle{
				GitDir: volumePath(steps.GitDir), Experiment: ar.Name, Candidates: candidates,
			}}}})
			if err != nil {
				return err
			}
			data, err := entries.Get("bundle")
			if err != nil {
				return fmt.Errorf("bundling %s: %w", ar.Name, err)
			}
			if err := workspace.WriteFileAtomic(out, data); err != nil {
				return err
			}
			branch := workspace.BranchPrefix + ar.Name
			fmt.Fprintf(cmd.OutOrStdout(), "Wrote branch %s of %s to %s.\nClone it with:\n  git clone -b %s %s\n", branch, ar.Name, out, branch, out)
			if candidates {
				fmt.Fprintf(cmd.OutOrStdout(), "and fetch the candidates into the clone with:\n  git fetch %s '%s*:%s*'\n", out, workspace.CandidateRefPrefix, workspace.CandidateRefPrefix)
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&out, "output", "o", "", "the bundle file to write")
	cmd.Flags().BoolVar(&candidates, "candidates", false, "also export every round's sealed candidate, kept or not ("+workspace.CandidateRefPrefix+"<name>/r<round>)")
	cmd.Flags().BoolVar(&force, "force", false, "overwrite the bundle file if it exists")
	return cmd
}

func newDiffCommand(c *cluster) *cobra.Command {
	var (
		rf roundFlag
		cf candidateFlag
	)
	cmd := &cobra.Command{
		Use:   "diff NAME --round N [--candidate a]",
		Short: "Print the change a round's candidate made, as sealed after its Researcher, kept or not",
		Args:  exactlyName,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if err := cf.valid(); err != nil {
				return err
			}
			ar, err := c.experiment(ctx, args[0])
			if err != nil {
				return err
			}
			if err := rf.check(ar); err != nil {
				return err
			}
			if rf.round == 0 {
				return fmt.Errorf("round 0 is the baseline, which changes nothing: name a round from 1 to %d", ar.Status.Round)
			}
			if err := cf.check(ar, rf.round); err != nil {
				return err
			}
			ref := workspace.CandidateRefOf(ar.Name, rf.round) + cf.name
			entries, err := c.read(ctx, ar, readout.Request{Items: []readout.Item{
				{Name: "diff", Diff: &readout.Diff{GitDir: volumePath(steps.GitDir), Subdir: string(ar.Spec.Source.Subdir), From: ref + "^", To: ref}},
			}})
			if err != nil {
				return err
			}
			data, err := entries.Get("diff")
			if err != nil {
				return fmt.Errorf("round %d of %s has no sealed candidate%s: %w", rf.round, ar.Name, roundVerdict(ar, rf.round), err)
			}
			if len(data) == 0 {
				fmt.Fprintf(cmd.ErrOrStderr(), "Round %d's candidate changed nothing.\n", rf.round)
				return nil
			}
			_, err = fmt.Fprintln(cmd.OutOrStdout(), text.Visible(string(data)))
			return err
		},
	}
	rf.register(cmd)
	cf.register(cmd)
	return cmd
}

// roundVerdict says, where the history still holds the round, its verdict.
func roundVerdict(ar *v1alpha1.AutoResearch, round int32) string {
	for _, h := range ar.Status.History {
		if h.Round == round && h.Verdict != "" {
			return fmt.Sprintf(" (verdict %s)", h.Verdict)
		}
	}
	return ""
}
