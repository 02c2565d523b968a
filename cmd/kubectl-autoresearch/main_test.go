package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
	"github.com/autoresearch-dev/autoresearch-operator/internal/readout"
	"github.com/autoresearch-dev/autoresearch-operator/internal/steps"
	"github.com/autoresearch-dev/autoresearch-operator/internal/version"
)

// execute runs the plugin with args against no cluster: only mistakes in
// the arguments can be found before one is needed.
func execute(args ...string) (string, error) {
	cmd := newRootCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(append(args, "--kubeconfig", "/nonexistent/kubeconfig", "--server", "https://127.0.0.1:1"))
	err := cmd.Execute()
	return out.String(), err
}

func TestArgumentMistakesAreExplained(t *testing.T) {
	cases := map[string]struct {
		args []string
		want string
	}{
		"note without text":      {[]string{"note", "tiny"}, `Usage: kubectl autoresearch note NAME "try a cosine schedule"`},
		"note of spaces":         {[]string{"note", "tiny", "  "}, "give the experiment and the note's text"},
		"note too long":          {[]string{"note", "tiny", strings.Repeat("x", maxNoteBytes+1)}, "at most 2048"},
		"status without a name":  {[]string{"status"}, "Usage: kubectl autoresearch status NAME"},
		"status in xml":          {[]string{"status", "tiny", "-o", "xml"}, "use -o json or -o yaml"},
		"suspend two":            {[]string{"suspend", "a", "b"}, "give the experiment's name"},
		"logs without a round":   {[]string{"logs", "tiny"}, `"round" not set`},
		"logs of a path":         {[]string{"logs", "tiny", "--round", "1", "--step", "../state/x"}, "name a step"},
		"export without a file":  {[]string{"export", "tiny"}, "-o FILE.bundle is required"},
		"diff without a round":   {[]string{"diff", "tiny"}, `"round" not set`},
		"logs of no candidate":   {[]string{"logs", "tiny", "--round", "1", "--candidate", "../b"}, "name a candidate by its letter"},
		"diff of candidate z":    {[]string{"diff", "tiny", "--round", "1", "--candidate", "z"}, "name a candidate by its letter"},
		"report of two":          {[]string{"report", "a", "b"}, "give the experiment's name"},
		"a command that is none": {[]string{"approve", "tiny"}, "unknown command"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			out, err := execute(tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want it to say %q\n%s", err, tc.want, out)
			}
		})
	}
}

func TestVersion(t *testing.T) {
	cmd := newRootCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"--version"})
	err := cmd.Execute()
	if err != nil || strings.TrimSpace(out.String()) != "kubectl-autoresearch "+version.String() {
		t.Errorf("--version printed %q (error %v), want the stamped version %q", out.String(), err, version.String())
	}
}

func TestCandidateFlagCheck(t *testing.T) {
	ar := &v1alpha1.AutoResearch{ObjectMeta: metav1.ObjectMeta{Name: "tiny"}, Spec: v1alpha1.AutoResearchSpec{Candidates: 2}}
	for _, tc := range []struct {
		name  string
		round int32
		want  string
	}{
		{"", 1, "tiny tries 2 candidates a round: name one with --candidate"},
		{"", 0, ""},
		{"b", 1, ""},
	} {
		err := candidateFlag{tc.name}.check(ar, tc.round)
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("candidate %q of round %d: %v, want %q", tc.name, tc.round, err, tc.want)
		}
	}
}

func TestRoundFlagCheck(t *testing.T) {
	ar := &v1alpha1.AutoResearch{ObjectMeta: metav1.ObjectMeta{Name: "tiny"}, Status: v1alpha1.AutoResearchStatus{Round: 2}}
	for round, want := range map[int32]string{-1: "count from 0", 3: "round 3 not found: tiny is at round 2", 2: "", 0: ""} {
		err := roundFlag{round}.check(ar)
		if (want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), want)) {
			t.Errorf("round %d: %v, want %q", round, err, want)
		}
	}
}

func experimentForTest() *v1alpha1.AutoResearch {
	return &v1alpha1.AutoResearch{
		ObjectMeta: metav1.ObjectMeta{Name: "tiny", Namespace: "research", UID: "uid-1"},
		Spec: v1alpha1.AutoResearchSpec{
			Source:   v1alpha1.SourceSpec{Subdir: "exp"},
			Variable: v1alpha1.VariableSpec{Files: []v1alpha1.RelativePath{"train.py"}},
		},
		Status: v1alpha1.AutoResearchStatus{
			Round:     3,
			Workspace: &v1alpha1.WorkspaceStatus{ClaimName: "tiny-workspace", StartCommit: "c0"},
			History: []v1alpha1.RoundRecord{
				{Round: 0, Verdict: v1alpha1.VerdictBaseline, Commit: "c0"},
				{Round: 1, Verdict: v1alpha1.VerdictImproved, Commit: "c1"},
				{Round: 2, Verdict: v1alpha1.VerdictNotImproved},
				{Round: 3, Verdict: v1alpha1.VerdictImproved, Commit: "c3"},
			},
		},
	}
}

func TestReaderPodIsRestrictedAndReadOnly(t *testing.T) {
	ar := experimentForTest()
	req := readout.Request{Items: []readout.Item{{Name: "log", File: "logs/round-1/train.log"}}}
	pod, err := readerPod(ar, "tiny-workspace", "registry.example/autoresearch:v1", req)
	if err != nil {
		t.Fatal(err)
	}
	s := pod.Spec
	if !ptr.Deref(s.SecurityContext.RunAsNonRoot, false) || s.SecurityContext.SeccompProfile == nil || ptr.Deref(s.AutomountServiceAccountToken, true) {
		t.Errorf("pod security: %+v, token %v", s.SecurityContext, s.AutomountServiceAccountToken)
	}
	if _, ok := pod.Labels[labelExperiment]; ok {
		t.Error("the reader carries the operator's experiment label: the operator would take it for a child")
	}
	if len(pod.OwnerReferences) != 1 || ptr.Deref(pod.OwnerReferences[0].Controller, false) {
		t.Errorf("owner references %+v, want the experiment as a plain owner", pod.OwnerReferences)
	}
	c := s.Containers[0]
	sc := c.SecurityContext
	if !ptr.Deref(sc.ReadOnlyRootFilesystem, false) || ptr.Deref(sc.AllowPrivilegeEscalation, true) || len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" {
		t.Errorf("container security: %+v", sc)
	}
	for _, v := range s.Volumes {
		if pvc := v.PersistentVolumeClaim; pvc != nil && (!pvc.ReadOnly || pvc.ClaimName != "tiny-workspace") {
			t.Errorf("claim volume %+v, want tiny-workspace read-only", pvc)
		}
	}
	for _, m := range c.VolumeMounts {
		if m.Name == "workspace" && (!m.ReadOnly || m.MountPath != steps.WorkspaceMount) {
			t.Errorf("workspace mount %+v, want read-only at %s", m, steps.WorkspaceMount)
		}
	}
	if c.Command[0] != steps.ImageBinary || c.Command[1] != "read" || c.Image != "registry.example/autoresearch:v1" {
		t.Errorf("command %v image %s", c.Command, c.Image)
	}
	var got readout.Request
	if err := json.Unmarshal([]byte(c.Command[len(c.Command)-1]), &got); err != nil || got.Items[0].File != "logs/round-1/train.log" {
		t.Errorf("the request does not round-trip: %+v, %v", got, err)
	}
}

func TestImageOfTakesTheExperimentsOwnPods(t *testing.T) {
	ar := experimentForTest()
	own := metav1.OwnerReference{APIVersion: "autoresearch.dev/v1alpha1", Kind: "AutoResearch", Name: "tiny", UID: ar.UID, Controller: ptr.To(true)}
	other := own
	other.UID = "someone-else"
	pod := func(owner metav1.OwnerReference, image string) corev1.Pod {
		return corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{OwnerReferences: []metav1.OwnerReference{owner}},
			Spec: corev1.PodSpec{
				InitContainers: []corev1.Container{{Image: "user/researcher", Command: []string{"/bin/sh"}}},
				Containers:     []corev1.Container{{Image: image, Command: []string{steps.ImageBinary, "workspace", "init"}}},
			},
		}
	}
	if got := imageOf(ar, []corev1.Pod{pod(other, "planted:1"), pod(own, "operator:1")}); got != "operator:1" {
		t.Errorf("image %q, want operator:1 from the experiment's own pod", got)
	}
	if got := imageOf(ar, []corev1.Pod{pod(other, "planted:1")}); got != "" {
		t.Errorf("image %q from a pod the experiment does not control", got)
	}
}

func TestReportRequestReadsTheLedgerAndKeptDiffs(t *testing.T) {
	req, ranges := reportRequest(experimentForTest())
	if err := req.Validate(); err != nil {
		t.Fatal(err)
	}
	if req.Items[0].File != "state/ledger/experiences.md" || req.Items[1].File != "worktree/exp/experiences.md" {
		t.Errorf("ledger at %s, else %s", req.Items[0].File, req.Items[1].File)
	}
	var diffs []string
	for _, it := range req.Items[2:] {
		diffs = append(diffs, it.Name+":"+it.Diff.From+".."+it.Diff.To+" in "+it.Diff.GitDir+" "+it.Diff.Subdir)
	}
	if got, want := strings.Join(diffs, " "), "diff-r1:c0..c1 in source/.git exp diff-r3:c1..c3 in source/.git exp"; got != want || len(ranges) != 2 {
		t.Errorf("diffs %s, want %s", got, want)
	}
}

func TestRoundLogs(t *testing.T) {
	var log bytes.Buffer
	w, err := readout.NewWriter(&log)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Add("round", []byte("train.log\neval.log\n")); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	entries, err := readout.Read(&log)
	if err != nil {
		t.Fatal(err)
	}
	if got := roundLogs(entries); got != "the workspace has its logs of eval, train" {
		t.Errorf("roundLogs = %q", got)
	}
	if got := roundLogs(readout.Entries{}); !strings.Contains(got, "no logs") {
		t.Errorf("roundLogs of nothing = %q", got)
	}
}
