package supervisor

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
	"github.com/autoresearch-dev/autoresearch-operator/internal/parity"
	"github.com/autoresearch-dev/autoresearch-operator/internal/steps"
	"github.com/autoresearch-dev/autoresearch-operator/internal/workspace"
)

// CheckCompliance seals the candidate of round (Workspace.Seal) and judges
// the files it changed since base against the protocol: fixed files
// untouched, only variable files (and the helper files that kept rounds
// added since start) changed. The result names the sealed commit, which is
// all that training, evaluation and the git step use of the candidate. In profile-first mode it also
// adds the seed's Step 2.5 advisory when the profile artifacts are missing.
// Kernel parity is CheckParity's. A Researcher that changed git itself or
// the ledger beyond its Strategy row (FinishResearch undid both) fails; one
// that changed nothing at all gives a result with NoChange, which is not
// worth training.
func CheckCompliance(ctx context.Context, ws *workspace.Workspace, spec *v1alpha1.AutoResearchSpec, round int32, base, start, stateDir string) (steps.ComplianceResult, error) {
	candidate, err := ws.Seal(ctx, round, base)
	if unsealable := (*workspace.UnsealableError)(nil); errors.As(err, &unsealable) {
		return steps.ComplianceResult{Violation: unsealable.Error()}, nil
	}
	if err != nil {
		return steps.ComplianceResult{}, err
	}
	if err := keepCandidateRef(ws, stateDir, round, candidate); err != nil {
		return steps.ComplianceResult{}, err
	}
	return checkSealed(ctx, ws.CheckCompliance, ws, spec, round, base, start, stateDir, candidate, ws.Dir)
}

// CheckCandidateCompliance is CheckCompliance for candidate (a, b, …; ""
// alone) of a round of several or started early, whose Researcher worked in
// root, a plain copy of the repository's files: root is sealed, then judged
// by the same rules, with what FinishResearch undid after the round's
// Researchers held against every candidate of the round. A candidate whose
// Researcher started from sealBase, which base has moved on from, is
// sealed there and carried onto base first; one that conflicts there is
// not judged, and its result names the conflict. The worktree's HEAD is
// not the candidate's to keep: its Researcher never had the worktree, and
// the supervisor may be committing another round there meanwhile.
func CheckCandidateCompliance(ctx context.Context, ws *workspace.Workspace, spec *v1alpha1.AutoResearchSpec, round int32, candidate, root, sealBase, base, start, stateDir string) (steps.ComplianceResult, error) {
	on := cmp.Or(sealBase, base)
	commit, err := ws.SealDir(ctx, round, candidate, on, root)
	if unsealable := (*workspace.UnsealableError)(nil); errors.As(err, &unsealable) {
		return steps.ComplianceResult{Violation: unsealable.Error()}, nil
	}
	if err != nil {
		return steps.ComplianceResult{}, err
	}
	if on != base {
		carried, conflicts, err := ws.Carry(ctx, round, candidate, commit, base)
		if err != nil || len(conflicts) > 0 {
			return steps.ComplianceResult{Candidate: commit, Conflict: strings.Join(conflicts, ", ")}, err
		}
		commit = carried
	}
	return checkSealed(ctx, ws.CheckChanges, ws, spec, round, base, start, stateDir, commit, filepath.Join(root, filepath.FromSlash(ws.Subdir)))
}

// CheckCombinedCompliance is CheckCompliance for candidate, the one
// spec.combine added to round: the changes of candidates, each sealed on
// base and checked, are merged on base, and the merge is judged by the same
// rules. One whose changes conflict is not judged, and its result names the
// conflict.
func CheckCombinedCompliance(ctx context.Context, ws *workspace.Workspace, spec *v1alpha1.AutoResearchSpec, round int32, candidate string, candidates []string, base, start, stateDir string) (steps.ComplianceResult, error) {
	commit, conflicts, err := ws.Combine(ctx, round, candidate, base, candidates)
	if err != nil || len(conflicts) > 0 {
		return steps.ComplianceResult{Conflict: strings.Join(conflicts, ", ")}, err
	}
	return checkSealed(ctx, ws.CheckCompliance, ws, spec, round, base, start, stateDir, commit, "")
}

// checkSealed judges the sealed candidate of round, whose Researcher worked
// in the experiment directory dir ("" for a candidate no Researcher made),
// by the file rules of judge.
func checkSealed(ctx context.Context, judge func(ctx context.Context, base, candidate string, fixed, variable []string) (workspace.ComplianceReport, error), ws *workspace.Workspace, spec *v1alpha1.AutoResearchSpec, round int32, base, start, stateDir, candidate, dir string) (steps.ComplianceResult, error) {
	// Helper files that kept rounds added belong to the Researcher too.
	helpers, err := ws.HelperFiles(ctx, start)
	if err != nil {
		return steps.ComplianceResult{}, err
	}
	variable := append(v1alpha1.Strings(spec.Variable.Files), helpers...)
	report, err := judge(ctx, base, candidate, v1alpha1.Strings(spec.Fixed.Files), variable)
	if err != nil {
		return steps.ComplianceResult{}, err
	}
	tampered, err := tampering(stateDir, round)
	if err != nil {
		return steps.ComplianceResult{}, err
	}
	res := steps.ComplianceResult{Candidate: candidate}
	switch {
	case tampered != "":
		res.Violation = tampered
		if !report.OK() {
			res.Violation += "; " + report.Summary()
		}
	case !report.OK():
		res.Violation = report.Summary()
	case len(report.Changes) == 0:
		res.NoChange = true
	}
	if p := spec.Profile; p != nil && p.Command != "" && dir != "" {
		res.Advisory = profileAdvisory(dir, round)
	}
	return res, nil
}

// profileAdvisory is the seed's Step 2.5: missing profile artifacts are
// flagged in the Insight, never a compliance failure.
func profileAdvisory(dir string, round int32) string {
	for _, name := range []string{"before", "analysis"} {
		p := filepath.Join(dir, "profiles", fmt.Sprintf("round-%d-%s.md", round, name))
		if _, err := os.Stat(p); err != nil {
			return "perf mode but no profile artifacts found — Researcher skipped discipline"
		}
	}
	return ""
}

// CheckParity runs the kernel parity check of targets with python in the
// experiment directory dir, each target's check by run, and sets res.Parity
// to the PARITY_FAIL line of the first failure. A candidate that already broke the file rules has its
// verdict, so the check does not run for it.
func CheckParity(ctx context.Context, res *steps.ComplianceResult, run parity.Run, python, dir string, targets []v1alpha1.KernelTarget) error {
	if res.Violation != "" || res.NoChange || len(targets) == 0 {
		return nil
	}
	pts := make([]parity.Target, 0, len(targets))
	for _, k := range targets {
		pts = append(pts, parity.Target{Name: k.Name, NewModule: string(k.NewModule), BaselineModule: string(k.BaselineModule), Fixture: string(k.Fixture), Atol: string(k.Atol), Rtol: string(k.Rtol)})
	}
	failure, err := parity.CheckWith(ctx, run, python, dir, pts)
	if err != nil {
		return err
	}
	if failure != nil {
		res.Parity = failure.Line
	}
	return nil
}
