package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
	"github.com/autoresearch-dev/autoresearch-operator/internal/schema"
	"github.com/autoresearch-dev/autoresearch-operator/internal/steps"
	"github.com/autoresearch-dev/autoresearch-operator/internal/supervisor"
	"github.com/autoresearch-dev/autoresearch-operator/internal/text"
	"github.com/autoresearch-dev/autoresearch-operator/internal/workspace"
)

func newWorkspaceCommand() *cobra.Command {
	var tools string
	cmd := &cobra.Command{
		Use:   "workspace",
		Short: "The supervisor's steps on the workspace volume, as the operator runs them in pods: init, prepare, check, checkout, commit, rollback, finish",
		PersistentPreRunE: func(*cobra.Command, []string) error {
			if tools == "" {
				return nil
			}
			return installTools(tools)
		},
	}
	cmd.PersistentFlags().StringVar(&tools, "install-tools", "", "first copy this binary into DIR, from where a user's image in the same pod runs the step wrapper")
	cmd.AddCommand(newWorkspaceInitCommand(), newWorkspacePrepareCommand(), newWorkspaceCheckCommand(),
		newWorkspaceGitCommand(steps.GitCommit), newWorkspaceGitCommand(steps.GitRollback), newWorkspaceCheckoutCommand(), newWorkspaceFinishCommand())
	return cmd
}

// worktreeFlags find the experiment's worktree; steps.Worktree builds them.
type worktreeFlags struct {
	dir, subdir, name string
	caches            []string
}

func (f *worktreeFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.dir, "worktree", steps.WorktreeDir, "the experiment's worktree")
	cmd.Flags().StringVar(&f.subdir, "subdir", ".", "the experiment directory inside the worktree")
	cmd.Flags().StringVar(&f.name, "name", "", "the experiment; its branch is autoresearch/<name>")
	cmd.Flags().StringArrayVar(&f.caches, "cache", nil, "an ignored path of the experiment directory that a rollback keeps")
	_ = cmd.MarkFlagRequired("name")
}

func (f *worktreeFlags) open() (*workspace.Workspace, error) {
	ws, err := workspace.Open(f.dir, f.subdir, f.name)
	if err != nil {
		return nil, err
	}
	ws.Caches = f.caches
	return ws, nil
}

// ledgerStepFlags are the flags of the steps that write the ledger: the
// worktree, a steps.LedgerUpdate as JSON, and the supervisor's state
// directory.
type ledgerStepFlags struct {
	worktreeFlags
	ledger   string
	stateDir string
	required bool
}

func (f *ledgerStepFlags) register(cmd *cobra.Command, usage string, required bool) {
	f.worktreeFlags.register(cmd)
	cmd.Flags().StringVar(&f.ledger, "ledger", "", usage)
	cmd.Flags().StringVar(&f.stateDir, "state-dir", steps.StateDir, "where the supervisor keeps the ledger's backup and the copy it publishes")
	if f.required = required; required {
		_ = cmd.MarkFlagRequired("ledger")
	}
}

// open reads the ledger update, nil when none is given, then opens the
// worktree: a malformed command line changes nothing.
func (f *ledgerStepFlags) open() (*workspace.Workspace, *steps.LedgerUpdate, error) {
	var u *steps.LedgerUpdate
	switch {
	case f.ledger != "":
		u = &steps.LedgerUpdate{}
		if err := json.Unmarshal([]byte(f.ledger), u); err != nil {
			return nil, nil, fmt.Errorf("--ledger: %w", err)
		}
	case f.required:
		return nil, nil, fmt.Errorf("--ledger is empty")
	}
	ws, err := f.worktreeFlags.open()
	return ws, u, err
}

func newWorkspaceInitCommand() *cobra.Command {
	var (
		wt        worktreeFlags
		repo      string
		src       supervisor.Source
		metric    string
		maxRounds int32
		fixed     []string
		result    string
	)
	cmd := &cobra.Command{
		Use:   "init --name NAME --metric M --max-rounds N --fixed FILE... [--clone-url URL --ref REF]",
		Short: "Clone the source when asked, create the worktree on branch autoresearch/<name>, start the ledger and hash the fixed files",
		Long: `Clones --clone-url into --repo unless it holds a clone already, checks out
--ref, then creates the worktree, starts the ledger and hashes the fixed
files. https credentials come from $GIT_USERNAME and $GIT_PASSWORD, an ssh
key from --ssh-key. The result is a WorkspaceResult; on failure its error
says why and the command exits with 1.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			src.Username, src.Password = os.Getenv("GIT_USERNAME"), os.Getenv("GIT_PASSWORD")
			res, err := func() (steps.WorkspaceResult, error) {
				if err := supervisor.CheckoutSource(cmd.Context(), src, repo); err != nil {
					return steps.WorkspaceResult{}, err
				}
				_, res, warnings, err := supervisor.CreateWorkspace(cmd.Context(), supervisor.WorkspaceOptions{
					Repo: repo, Subdir: wt.subdir, Worktree: wt.dir, Name: wt.name,
					Metric: metric, MaxRounds: maxRounds, Fixed: fixed,
				})
				for _, w := range warnings {
					fmt.Fprintln(cmd.ErrOrStderr(), "warning:", w)
				}
				return res, err
			}()
			if err != nil {
				res.Error = err.Error()
				res.Error = text.Truncate(res.Error, maxErrorBytes)
			}
			if werr := writeResult(result, &res); werr != nil {
				return werr
			}
			return err
		},
	}
	wt.register(cmd)
	fl := cmd.Flags()
	fl.StringVar(&repo, "repo", steps.SourceDir, "the repository holding the experiment, or where to clone it")
	fl.StringVar(&src.URL, "clone-url", "", "clone this repository into --repo unless it holds a clone already")
	fl.StringVar(&src.Ref, "ref", "", "the branch, tag or commit to start from")
	fl.StringVar(&src.SSHKeyFile, "ssh-key", "", "the private key for an ssh --clone-url")
	fl.StringVar(&metric, "metric", "", "the metric, for the ledger headers")
	fl.Int32Var(&maxRounds, "max-rounds", 0, "the protocol's maxRounds, for the ledger header")
	fl.StringArrayVar(&fixed, "fixed", nil, "a fixed file to hash, relative to the experiment directory (repeatable)")
	fl.StringVar(&result, "result", steps.TerminationMessagePath, "where the JSON result goes")
	return cmd
}

// maxErrorBytes keeps a failed init's error, which may quote git at length,
// well inside a termination message.
const maxErrorBytes = 2048

func newWorkspacePrepareCommand() *cobra.Command {
	var (
		f               ledgerStepFlags
		round           int32
		base            string
		candidate, root string
		prepare         bool
	)
	cmd := &cobra.Command{
		Use:   "prepare --name NAME --round N --base SHA [--ledger JSON] [--candidate a --candidate-root DIR [--prepare-worktree]]",
		Short: "Before a Researcher: record a pending ledger row, put the worktree back on the round's base and back up the ledger; for a candidate of a round of several, copy base's files to its own directory",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ws, u, err := f.open()
			if err != nil {
				return err
			}
			if root == "" || prepare {
				if err := supervisor.PrepareRound(cmd.Context(), ws, round, base, f.stateDir, u); err != nil {
					return err
				}
			}
			if root == "" {
				return nil
			}
			return supervisor.PrepareCandidate(cmd.Context(), ws, round, base, root)
		},
	}
	f.register(cmd, "a ledger update to record first, as JSON", false)
	cmd.Flags().Int32Var(&round, "round", 0, "the round")
	cmd.Flags().StringVar(&base, "base", "", "the commit the round starts from")
	cmd.Flags().StringVar(&candidate, "candidate", "", "the candidate (a, b, …) of a round of several")
	cmd.Flags().StringVar(&root, "candidate-root", "", "the directory where the Researcher works on a copy of its own, in a round of several candidates or started early")
	cmd.Flags().BoolVar(&prepare, "prepare-worktree", false, "with --candidate-root, also prepare the worktree as for a round of one (a round's first candidate does)")
	_ = cmd.MarkFlagRequired("base")
	return cmd
}

func newWorkspaceCheckCommand() *cobra.Command {
	var (
		wt          worktreeFlags
		stateDir    string
		round       int32
		base, start string
		specJSON    string
		specFile    string
		alsoWrite   string
		result      string
		candidate   string
		root        string
		sealBase    string
		combine     []string
	)
	cmd := &cobra.Command{
		Use:   "check --name NAME --round N --base SHA --start SHA --spec JSON|--spec-file FILE",
		Short: "After a Researcher: take its Strategy, restore the ledger and check which files it changed",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			spec, err := readSpec(specJSON, specFile)
			if err != nil {
				return err
			}
			ws, err := wt.open()
			if err != nil {
				return err
			}
			var res steps.ComplianceResult
			switch {
			case len(combine) > 0:
				res, err = supervisor.CheckCombinedCompliance(cmd.Context(), ws, spec, round, candidate, combine, base, start, stateDir)
			case root != "":
				// The candidate's Researcher reached nothing but its own
				// directory, where its Strategy row is.
				res, err = supervisor.CheckCandidateCompliance(cmd.Context(), ws, spec, round, candidate, root, sealBase, base, start, stateDir)
				res.Strategy = workspace.StrategyFrom(filepath.Join(root, filepath.FromSlash(ws.Subdir), workspace.ExperiencesFile), int(round))
			default:
				var strategy string
				if strategy, err = supervisor.FinishResearch(cmd.Context(), ws, round, stateDir, nil); err != nil {
					return err
				}
				res, err = supervisor.CheckCompliance(cmd.Context(), ws, spec, round, base, start, stateDir)
				res.Strategy = strategy
			}
			if err != nil {
				return err
			}
			if len(spec.KernelTargets) > 0 && res.Violation == "" && !res.NoChange && res.Conflict == "" {
				// The parity check runs the candidate as sealed.
				run := supervisor.RunDir(stateDir, round, 0, supervisor.CandidateStep(supervisor.RunParity, candidate))
				if _, err := supervisor.PrepareRun(cmd.Context(), ws, res.Candidate, run, "", nil); err != nil {
					return err
				}
			}
			for _, p := range []string{alsoWrite, result} {
				if p == "" {
					continue
				}
				if err := writeResult(p, &res); err != nil {
					return err
				}
			}
			return nil
		},
	}
	wt.register(cmd)
	fl := cmd.Flags()
	fl.StringVar(&stateDir, "state-dir", steps.StateDir, "where the supervisor keeps the ledger backup")
	fl.Int32Var(&round, "round", 0, "the round")
	fl.StringVar(&base, "base", "", "the commit the round started from")
	fl.StringVar(&start, "start", "", "the experiment's start commit")
	fl.StringVar(&specJSON, "spec", "", "the AutoResearch spec, as JSON")
	fl.StringVar(&specFile, "spec-file", "", "a file holding the AutoResearch spec, as JSON or YAML")
	fl.StringVar(&alsoWrite, "also-write", "", "a second file for the result, for the parity step")
	fl.StringVar(&result, "result", steps.TerminationMessagePath, "where the JSON result goes")
	fl.StringVar(&candidate, "candidate", "", "the candidate (a, b, …) of a round of several")
	fl.StringVar(&root, "candidate-root", "", "the directory where the Researcher worked on a copy of its own")
	fl.StringVar(&sealBase, "seal-base", "", "with --candidate-root, the commit the Researcher started from, when --base has moved on since: the candidate is carried onto --base")
	fl.StringSliceVar(&combine, "combine", nil, "the sealed commits, each on --base, of the candidates whose changes --candidate applies together")
	cmd.MarkFlagsMutuallyExclusive("combine", "candidate-root")
	for _, name := range []string{"base", "start"} {
		_ = cmd.MarkFlagRequired(name)
	}
	cmd.MarkFlagsOneRequired("spec", "spec-file")
	cmd.MarkFlagsMutuallyExclusive("spec", "spec-file")
	return cmd
}

// readSpec decodes the spec given inline or in a file, with its defaults.
func readSpec(inline, file string) (*v1alpha1.AutoResearchSpec, error) {
	data := []byte(inline)
	if file != "" {
		var err error
		if data, err = os.ReadFile(file); err != nil {
			return nil, err
		}
	}
	spec := &v1alpha1.AutoResearchSpec{}
	if err := yaml.Unmarshal(data, spec); err != nil {
		return nil, fmt.Errorf("the spec: %w", err)
	}
	return spec, schema.DefaultSpec(spec)
}

func newWorkspaceGitCommand(action string) *cobra.Command {
	var (
		f         ledgerStepFlags
		push      pushFlags
		base      string
		candidate string
		message   string
		result    string
	)
	cmd := &cobra.Command{
		Use:   action + " --name NAME --base SHA --ledger JSON",
		Short: "Commit the round's candidate, then record its ledger row",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ws, u, err := f.open()
			if err != nil {
				return err
			}
			if u.Round != nil {
				// A Researcher that failed or ran out of time had no
				// compliance check, which puts back the worktree's .git
				// file it may have pointed at a repository of its own,
				// with filters git would run here.
				if _, err := supervisor.RestoreGitLink(ws, f.stateDir, u.Round.Round); err != nil {
					return err
				}
			}
			commit, err := supervisor.GitStep(cmd.Context(), ws, f.stateDir, action, base, candidate, message, *u)
			if err != nil {
				return err
			}
			return writeResult(result, &steps.GitResult{Commit: commit, Push: push.push(cmd.Context(), ws)})
		},
	}
	if action == steps.GitRollback {
		cmd.Short = "Roll the worktree back to the round's base, keeping the ledger, then record the round's ledger row"
	}
	f.register(cmd, "the round's ledger update, as JSON", true)
	cmd.Flags().StringVar(&base, "base", "", "the commit the round started from")
	cmd.Flags().StringVar(&result, "result", steps.TerminationMessagePath, "where the JSON result goes")
	if action == steps.GitCommit {
		cmd.Flags().StringVar(&message, "message", "", "the commit message")
		cmd.Flags().StringVar(&candidate, "candidate", "", "the round's sealed candidate, whose files the commit holds")
		_ = cmd.MarkFlagRequired("message")
		_ = cmd.MarkFlagRequired("candidate")
		push.register(cmd)
	}
	_ = cmd.MarkFlagRequired("base")
	return cmd
}

func newWorkspaceCheckoutCommand() *cobra.Command {
	var (
		wt                    worktreeFlags
		commit, dest, trained string
		logDir                string
		outputs               []string
	)
	cmd := &cobra.Command{
		Use:   "checkout --name NAME --commit SHA --dest DIR [--trained DIR --output PATH...] [--log-dir DIR]",
		Short: "Make the fresh checkout of a commit that a training or evaluation step runs in; an evaluation's gets the training outputs",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ws, err := wt.open()
			if err != nil {
				return err
			}
			if logDir != "" {
				if err := os.MkdirAll(logDir, 0o755); err != nil {
					return err
				}
			}
			_, err = supervisor.PrepareRun(cmd.Context(), ws, commit, dest, trained, outputs)
			return err
		},
	}
	wt.register(cmd)
	fl := cmd.Flags()
	fl.StringVar(&commit, "commit", "", "the code to check out")
	fl.StringVar(&dest, "dest", "", "the checkout, emptied first")
	fl.StringVar(&trained, "trained", "", "the training checkout, whose experiment directory holds the outputs, for an evaluation")
	fl.StringArrayVar(&outputs, "output", nil, "a training output to copy from --trained, relative to the experiment directory")
	fl.StringVar(&logDir, "log-dir", "", "a directory to make for the step's log, which the step's pod mounts")
	for _, name := range []string{"commit", "dest"} {
		_ = cmd.MarkFlagRequired(name)
	}
	return cmd
}

func newWorkspaceFinishCommand() *cobra.Command {
	var (
		f      ledgerStepFlags
		push   pushFlags
		result string
	)
	cmd := &cobra.Command{
		Use:   "finish --name NAME --ledger JSON",
		Short: "Write the ledger's final status and commit the ledger",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ws, u, err := f.open()
			if err != nil {
				return err
			}
			_, head, err := supervisor.Finish(cmd.Context(), ws, f.stateDir, *u)
			if err != nil {
				return err
			}
			return writeResult(result, &steps.GitResult{Commit: head, Push: push.push(cmd.Context(), ws)})
		},
	}
	f.register(cmd, "the final ledger update, as JSON", true)
	push.register(cmd)
	cmd.Flags().StringVar(&result, "result", steps.TerminationMessagePath, "where the JSON result goes")
	return cmd
}

// pushFlags push the experiment branch to spec.output.git after a git step.
type pushFlags struct {
	url        string
	candidates bool
	secretDir  string
}

func (p *pushFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&p.url, "push-url", "", "a remote repository to push the experiment branch to afterwards")
	fl.BoolVar(&p.candidates, "push-candidates", false, "also push the experiment's candidate refs")
	fl.StringVar(&p.secretDir, "push-secret-dir", "", "a mounted Secret with the push credentials: token (and username), or ssh-privatekey and known_hosts")
}

// push pushes when asked. A failed push is the result's, never the step's:
// the round is kept, and the next commit or the end pushes again.
func (p *pushFlags) push(ctx context.Context, ws *workspace.Workspace) *steps.PushResult {
	if p.url == "" {
		return nil
	}
	o := supervisor.Output{URL: p.url, Candidates: p.candidates}
	var err error
	if p.secretDir != "" {
		err = o.ReadSecretDir(p.secretDir)
	}
	var commit string
	if err == nil {
		commit, err = supervisor.Push(ctx, ws, o)
	}
	if err != nil {
		return &steps.PushResult{Error: supervisor.PushError(err)}
	}
	return &steps.PushResult{Commit: commit}
}
