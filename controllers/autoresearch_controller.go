// Package controllers holds the AutoResearch reconciler: it drives the round
// engine and maps its actions to Pods, Jobs, ConfigMaps and a workspace
// claim, and the state of those children back to the engine's observations.
package controllers

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
	"github.com/autoresearch-dev/autoresearch-operator/internal/prompt"
	"github.com/autoresearch-dev/autoresearch-operator/internal/round"
	"github.com/autoresearch-dev/autoresearch-operator/internal/text"
)

// ownerUIDKey indexes children by the UID of their controlling owner.
const ownerUIDKey = ".metadata.controllerUID"

// AutoResearchReconciler reconciles AutoResearch objects.
type AutoResearchReconciler struct {
	client.Client
	scheme   *runtime.Scheme
	recorder events.EventRecorder
	// image is the operator's own image: it runs the git and compliance
	// steps and brings the autoresearch binary into user images.
	image string
	// stepResources are the requests and limits of every container that
	// runs the operator's image.
	stepResources corev1.ResourceRequirements
	clock         clock.PassiveClock
	concurrency   int
	// reader reads a child that exists already from the API server: the
	// manager caches only Pods and Jobs, and a cached read of any other
	// kind would cache every object of that kind in the cluster.
	reader client.Reader
	// refused holds, by experiment, why the API server refused the child
	// its step needs, until a create succeeds: the step waits for it, and
	// the status says so.
	refused sync.Map
	// retries holds the children that failed through no fault of the
	// candidate, to make them again with backoff.
	retries retries
}

// Option configures an AutoResearchReconciler.
type Option func(*AutoResearchReconciler)

// WithImage sets the operator's own image, which runs the git and
// compliance steps and supplies the step wrapper to user images.
func WithImage(image string) Option {
	return func(r *AutoResearchReconciler) { r.image = image }
}

// DefaultStepResources are the requests and limits of the operator's own
// step containers unless WithStepResources says otherwise: a namespace
// whose ResourceQuota demands them admits the pods, and a clone or a git
// step fits in them.
func DefaultStepResources() corev1.ResourceRequirements {
	return corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("512Mi")},
	}
}

// WithStepResources sets the requests and limits of every container that
// runs the operator's image: the clone, the file check, the git and finish
// steps, and the tools and checkout init containers of the user's pods.
func WithStepResources(res corev1.ResourceRequirements) Option {
	return func(r *AutoResearchReconciler) { r.stepResources = res }
}

// WithClock sets the engine's clock; the real one by default.
func WithClock(c clock.PassiveClock) Option {
	return func(r *AutoResearchReconciler) { r.clock = c }
}

// WithMaxConcurrentReconciles sets how many experiments reconcile at once;
// one by default.
func WithMaxConcurrentReconciles(n int) Option {
	return func(r *AutoResearchReconciler) { r.concurrency = max(1, n) }
}

// WithRetryBackoff sets the wait before a child that failed a second time
// is made again, which doubles with each further failure up to maxDelay.
func WithRetryBackoff(delay, maxDelay time.Duration) Option {
	return func(r *AutoResearchReconciler) { r.retries.delay, r.retries.maxDelay = delay, maxDelay }
}

// NewReconciler is the AutoResearch reconciler over a client, the scheme
// its children are owned through and a recorder for its events.
func NewReconciler(c client.Client, scheme *runtime.Scheme, recorder events.EventRecorder, opts ...Option) *AutoResearchReconciler {
	r := &AutoResearchReconciler{Client: c, reader: c, scheme: scheme, recorder: recorder, stepResources: DefaultStepResources(), clock: clock.RealClock{}, concurrency: 1}
	r.retries.delay, r.retries.maxDelay = DefaultRetryDelay, DefaultMaxRetryDelay
	for _, opt := range opts {
		opt(r)
	}
	return r
}

// +kubebuilder:rbac:groups=autoresearch.dev,resources=autoresearches,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=autoresearch.dev,resources=autoresearches/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=autoresearch.dev,resources=autoresearches/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;create;delete
// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims,verbs=get;create
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups=networking.k8s.io,resources=networkpolicies,verbs=get;create
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile loads the experiment and advances its loop by what its children
// report.
func (r *AutoResearchReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	ar := &v1alpha1.AutoResearch{}
	if err := r.Get(ctx, req.NamespacedName, ar); err != nil {
		if apierrors.IsNotFound(err) {
			forgetExperimentMetrics(req.Namespace, req.Name)
			r.refused.Delete(req.NamespacedName)
			r.retries.forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !ar.DeletionTimestamp.IsZero() {
		// Owner references let the garbage collector remove the children;
		// a retained workspace claim has none and stays.
		forgetExperimentMetrics(ar.Namespace, ar.Name)
		r.retries.forget(req.NamespacedName)
		return ctrl.Result{}, nil
	}
	return r.reconcile(ctx, ar)
}

// unsupported is what of the experiment's spec the operator cannot run: a
// hidden holdout without a volume to bring its files to its pod, or with
// the workspace claim as that volume, which every Researcher mounts.
func unsupported(ar *v1alpha1.AutoResearch, spec *v1alpha1.AutoResearchSpec) field.ErrorList {
	h := spec.Holdout
	if h == nil {
		return nil
	}
	p := field.NewPath("spec", "holdout", "volume")
	if h.Volume == nil {
		return field.ErrorList{field.Required(p,
			"on a cluster the hidden holdout's command and data come from a ConfigMap, a Secret or a claim that only its own pod mounts at spec.holdout.dir: set spec.holdout.volume")}
	}
	if c := h.Volume.PersistentVolumeClaim; c != nil && c.ClaimName == workspaceClaimName(ar) {
		return field.ErrorList{field.Invalid(p.Child("persistentVolumeClaim", "claimName"), c.ClaimName,
			"the holdout's claim may not be the workspace claim, which every Researcher mounts: keep the holdout's data on a claim of its own")}
	}
	return nil
}

// nextObservation is how soon a pass that handed the engine a finished
// child looks for the next one: at once, without the backoff of an error.
const nextObservation = time.Millisecond

func (r *AutoResearchReconciler) reconcile(ctx context.Context, ar *v1alpha1.AutoResearch) (ctrl.Result, error) {
	log := logf.FromContext(ctx)
	w, err := r.loadWorld(ctx, ar)
	if err != nil {
		return ctrl.Result{}, err
	}
	// The API server stored the spec with its defaults.
	spec := ar.Spec.DeepCopy()
	obs, failure := observe(ar, spec, w)
	if failure != nil {
		// The child broke for reasons of its own: make it anew.
		return ctrl.Result{}, r.retry(ctx, ar, failure, w)
	}
	var result ctrl.Result
	var waits wait
	if actions := round.CurrentActions(spec, &ar.Status); len(actions) > 0 && obs.Kind == round.ObserveTick {
		for _, a := range actions {
			name := childName(ar, a)
			pods := w.jobPods[name]
			if p := w.pods[name]; p != nil {
				pods = []*corev1.Pod{p}
			}
			// Waiting is shown, never judged: the first child that waits
			// says why.
			if waits.message == "" {
				waits = waitReason(pods)
			}
			if waits.message == "" && awaitsAdmission(w.jobs[name]) {
				waits = wait{message: fmt.Sprintf("%s waits for admission to queue %s", name, spec.QueueName)}
			}
			if w.pods[name] == nil && w.jobs[name] == nil {
				// A child that failed waits for its backoff to end.
				if msg, _ := r.retries.waiting(ar, name, w.now); msg != "" && waits.message == "" {
					waits = wait{message: msg}
				}
			}
			if jobFinished(w.jobs[name]) {
				// Its pods have yet to reach the cache; their watch wakes
				// the loop when they do, and this when they never will.
				result.RequeueAfter = soonest(result.RequeueAfter, podLag)
			}
		}
		if why, ok := r.refused.Load(client.ObjectKeyFromObject(ar)); ok && waits.message == "" {
			// The refusal had its event when it happened.
			waits = wait{message: why.(string), refusal: true}
		}
		obs.Waiting = waits.message
	}
	out := round.Next(round.Input{Spec: spec, Status: ar.Status, Generation: ar.Generation, Observation: obs, Now: r.clock.Now(), Unsupported: unsupported(ar, spec)})

	old := ar.Status.DeepCopy()
	stop := judgedButRunning(ar, spec, old, obs, w)
	if !equality.Semantic.DeepEqual(*old, out.Status) {
		ar.Status = out.Status
		if err := r.Status().Update(ctx, ar); err != nil {
			// A conflict is retried with backoff from a fresh read.
			return ctrl.Result{}, err
		}
		log.V(1).Info("Status updated", "phase", ar.Status.Phase, "round", ar.Status.Round)
		if obs.Kind != round.ObserveTick {
			// A pass hands the engine one finished child. Others that
			// finished meanwhile (a round's candidates end together) may
			// have had their events merged into this pass, and the status
			// just written wakes no one: look for them at once.
			result.RequeueAfter = nextObservation
		}
	}
	r.announce(ar, old, out.Actions)
	if waits.eventType != "" && waits.message != round.Waiting(old) {
		r.recorder.Eventf(ar, nil, waits.eventType, waits.reason, actionWait, "%s", waits.message)
	}
	for _, next := range out.Actions {
		if err := r.perform(ctx, ar, w, next); err != nil {
			return ctrl.Result{}, fmt.Errorf("%s: %w", describe(next), err)
		}
	}
	if stop != "" {
		if err := r.deleteChild(ctx, stop, w); err != nil {
			return ctrl.Result{}, err
		}
	}
	current := map[string]bool{}
	for _, a := range round.CurrentActions(spec, &ar.Status) {
		name := childName(ar, a)
		current[name] = true
		if _, left := r.retries.waiting(ar, name, w.now); left > 0 {
			result.RequeueAfter = soonest(result.RequeueAfter, left)
		}
	}
	r.retries.keep(ar, current)
	if _, still := r.refused.Load(client.ObjectKeyFromObject(ar)); waits.refusal && !still {
		// The child was made at last: the status says so no longer.
		result.RequeueAfter = time.Second
	}
	return result, r.cleanup(ctx, ar, w)
}

// judgedButRunning is the Job whose step obs judges while the Job would go
// on, to be deleted once the judgement is written: one Kueue did not
// admit, which it would start once the quota frees up, for nothing, and
// one whose pod the kubelet evicted, which it would run again.
func judgedButRunning(ar *v1alpha1.AutoResearch, spec *v1alpha1.AutoResearchSpec, st *v1alpha1.AutoResearchStatus, obs round.Observation, w world) string {
	if obs.Kind == round.ObserveTick {
		return ""
	}
	for _, a := range round.CurrentActions(spec, st) {
		name := childName(ar, a)
		if a.Round != obs.Round || a.Candidate != obs.Candidate || w.jobs[name] == nil {
			continue
		}
		if obs.Kind == round.ObserveQueued || evictedByTheKubelet(w.jobPods[name]) != nil && !jobFinished(w.jobs[name]) {
			return name
		}
	}
	return ""
}

// loadWorld finds the experiment's children by their owner's UID.
func (r *AutoResearchReconciler) loadWorld(ctx context.Context, ar *v1alpha1.AutoResearch) (world, error) {
	w := world{pods: map[string]*corev1.Pod{}, jobs: map[string]*batchv1.Job{}, jobPods: map[string][]*corev1.Pod{}, now: r.clock.Now()}
	var jobs batchv1.JobList
	if err := r.List(ctx, &jobs, client.InNamespace(ar.Namespace), client.MatchingFields{ownerUIDKey: string(ar.UID)}); err != nil {
		return w, err
	}
	jobNames := map[string]string{}
	for i := range jobs.Items {
		j := &jobs.Items[i]
		w.jobs[j.Name] = j
		jobNames[string(j.UID)] = j.Name
	}
	var pods corev1.PodList
	if err := r.List(ctx, &pods, client.InNamespace(ar.Namespace), client.MatchingLabels{LabelExperiment: ar.Name}); err != nil {
		return w, err
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		owner := metav1.GetControllerOf(p)
		switch {
		case owner == nil:
		case owner.UID == ar.UID:
			w.pods[p.Name] = p
		case jobNames[string(owner.UID)] != "":
			name := jobNames[string(owner.UID)]
			w.jobPods[name] = append(w.jobPods[name], p)
		}
	}
	return w, nil
}

// perform makes the child that carries out an action, if it does not exist.
func (r *AutoResearchReconciler) perform(ctx context.Context, ar *v1alpha1.AutoResearch, w world, a round.Action) error {
	b := childBuilder{ar: ar, image: r.image, resources: r.stepResources}
	name := childName(ar, a)
	if msg, _ := r.retries.waiting(ar, name, w.now); msg != "" {
		return nil
	}
	switch a.Type {
	case round.ActionPrepareWorkspace:
		if ar.Spec.Source.PVC == nil {
			if err := r.ensureWorkspaceClaim(ctx, ar, b.workspaceClaim()); err != nil {
				return err
			}
		}
		if w.pods[name] != nil {
			return nil
		}
		return r.ensure(ctx, ar, b.initPod())
	case round.ActionRunResearcher:
		if w.pods[name] != nil {
			return nil
		}
		text, err := prompt.Render(*a.Prompt)
		if err != nil {
			return err
		}
		cm, err := b.roundConfigMap(a, text)
		if err != nil {
			return err
		}
		if err := r.ensure(ctx, ar, cm); err != nil {
			return err
		}
		pod, err := b.researcherPod(a)
		if err != nil {
			return err
		}
		return r.ensure(ctx, ar, pod)
	case round.ActionCheckCompliance:
		if w.pods[name] != nil {
			return nil
		}
		return r.ensure(ctx, ar, b.compliancePod(a))
	case round.ActionRunTrain, round.ActionRunEval, round.ActionRunHoldout:
		if w.jobs[name] != nil {
			return nil
		}
		build := b.gpuJob
		if a.Type == round.ActionRunHoldout {
			build = b.holdoutJob
			if err := r.ensure(ctx, ar, b.holdoutPolicy()); err != nil {
				return err
			}
		}
		job, err := build(a)
		if err != nil {
			return err
		}
		return r.ensure(ctx, ar, job)
	case round.ActionCommit, round.ActionRollback:
		if w.pods[name] != nil {
			return nil
		}
		return r.ensure(ctx, ar, b.gitPod(a))
	case round.ActionFinish:
		if w.pods[name] != nil {
			return nil
		}
		return r.ensure(ctx, ar, b.finishPod(a))
	case round.ActionReportRound, round.ActionWarn:
		// Both became events in announce.
		return nil
	}
	return fmt.Errorf("unknown action %q", a.Type)
}

// ensure creates a child owned by the experiment. One that exists already
// is fine when this experiment controls it (a restart raced its creation);
// one that something else owns is never taken over: the step waits, with a
// warning event, until it is gone.
func (r *AutoResearchReconciler) ensure(ctx context.Context, ar *v1alpha1.AutoResearch, obj client.Object) error {
	if err := controllerutil.SetControllerReference(ar, obj, r.scheme); err != nil {
		return err
	}
	_, err := r.create(ctx, ar, obj)
	return err
}

// ensureWorkspaceClaim makes the workspace claim. Under reclaimPolicy
// Retain it has no owner reference, so that deleting the experiment leaves
// it and its results; its labels still name the experiment and its UID,
// by which the operator knows it again after a restart and tells it from
// the claim an earlier experiment of the same name left behind.
func (r *AutoResearchReconciler) ensureWorkspaceClaim(ctx context.Context, ar *v1alpha1.AutoResearch, claim *corev1.PersistentVolumeClaim) error {
	if ar.Spec.Workspace.ReclaimPolicy == v1alpha1.ReclaimDelete {
		return r.ensure(ctx, ar, claim)
	}
	created, err := r.create(ctx, ar, claim)
	if created {
		r.recorder.Eventf(ar, claim, corev1.EventTypeNormal, reasonClaimRetained, actionCreate,
			"workspace claim %s outlives this experiment (reclaimPolicy Retain); delete it with kubectl delete pvc -n %s %s once its results are saved",
			claim.Name, claim.Namespace, claim.Name)
	}
	return err
}

// create creates a child of the experiment and says whether it did. One
// that exists already is fine when it is the experiment's.
func (r *AutoResearchReconciler) create(ctx context.Context, ar *v1alpha1.AutoResearch, obj client.Object) (bool, error) {
	err := r.Create(ctx, obj)
	switch {
	case err == nil:
		logf.FromContext(ctx).V(1).Info("Created child", "kind", fmt.Sprintf("%T", obj), "child", klog.KObj(obj))
		r.refused.Delete(client.ObjectKeyFromObject(ar))
		return true, nil
	case apierrors.IsForbidden(err) || apierrors.IsInvalid(err):
		// A quota, an admission policy or a webhook refused it: the create
		// is retried with backoff, and each refusal says what to change.
		msg := fmt.Sprintf("creating %s: %v", obj.GetName(), err)
		r.recorder.Eventf(ar, nil, corev1.EventTypeWarning, reasonCreateRefused, actionCreate, "%s", msg)
		r.refused.Store(client.ObjectKeyFromObject(ar), text.Truncate(msg, 512))
		return false, err
	case !apierrors.IsAlreadyExists(err):
		return false, err
	}
	existing, ok := obj.DeepCopyObject().(client.Object)
	if !ok {
		return false, fmt.Errorf("%T is not a client.Object", obj)
	}
	if err := r.reader.Get(ctx, client.ObjectKeyFromObject(obj), existing); err != nil {
		return false, err
	}
	labels := existing.GetLabels()
	if metav1.IsControlledBy(existing, ar) || labels[LabelExperimentUID] == string(ar.UID) {
		return false, nil
	}
	kind := "object"
	if gvk, err := apiutil.GVKForObject(obj, r.scheme); err == nil {
		kind = gvk.Kind
	}
	msg := fmt.Sprintf("%s %s exists and is not controlled by this experiment; delete or rename it so that the step can run", kind, obj.GetName())
	if labels[LabelExperiment] == ar.Name && labels[LabelExperimentUID] != "" {
		msg = fmt.Sprintf("%s %s holds the workspace an earlier experiment named %s retained, and this one does not start over it: "+
			"delete the claim once its results are saved, or give this experiment another name", kind, obj.GetName(), ar.Name)
	}
	r.recorder.Eventf(ar, existing, corev1.EventTypeWarning, reasonChildConflict, actionCreate, "%s", msg)
	return false, errors.New(msg)
}

// retry deletes a child that failed through no fault of the candidate, to
// be made anew: at once the first time, after a backoff when it fails
// again, so that a step that fails for good neither spins nor hides.
func (r *AutoResearchReconciler) retry(ctx context.Context, ar *v1alpha1.AutoResearch, f *stepFailure, w world) error {
	var child client.Object
	if p := w.pods[f.name]; p != nil {
		child = p
	} else if j := w.jobs[f.name]; j != nil {
		child = j
	}
	msg := f.reason
	if !f.outdated && !f.neverRan && child != nil {
		n, wait, first := r.retries.failed(ar, f.name, child.GetUID(), f.reason, w.now)
		if !first {
			// Deleted already; the cache has yet to say so.
			return r.deleteChild(ctx, f.name, w)
		}
		if wait > 0 {
			msg = fmt.Sprintf("%s; it failed %d times and is made again in %s", msg, n, wait)
		}
	}
	logf.FromContext(ctx).Info("Recreating a step", "child", f.name, "reason", msg)
	if !f.outdated {
		// The child it names keeps the event of each failure apart from
		// those before it, which the recorder would fold into theirs.
		r.recorder.Eventf(ar, child, corev1.EventTypeWarning, reasonStepRetried, actionRetry, "%s", msg)
	}
	return r.deleteChild(ctx, f.name, w)
}

// soonest is the earlier of two requeue delays, zero meaning none.
func soonest(a, b time.Duration) time.Duration {
	if a == 0 || b < a {
		return b
	}
	return a
}

func (r *AutoResearchReconciler) deleteChild(ctx context.Context, name string, w world) error {
	var obj client.Object
	if p := w.pods[name]; p != nil {
		obj = p
	} else if j := w.jobs[name]; j != nil {
		obj = j
	} else {
		return nil
	}
	return client.IgnoreNotFound(r.Delete(ctx, obj, client.PropagationPolicy(metav1.DeletePropagationBackground)))
}

// cleanup removes the children of rounds before the previous one, so that a
// long experiment does not pile up finished pods; their logs stay on the
// workspace volume.
func (r *AutoResearchReconciler) cleanup(ctx context.Context, ar *v1alpha1.AutoResearch, w world) error {
	keep := ar.Status.Round - 1
	var objs []client.Object
	for _, p := range w.pods {
		objs = append(objs, p)
	}
	for _, j := range w.jobs {
		objs = append(objs, j)
	}
	rounds := map[int32]bool{}
	for _, obj := range objs {
		n, err := strconv.Atoi(obj.GetLabels()[LabelRound])
		if err != nil || int32(n) >= keep || obj.GetLabels()[LabelStep] == stepInit {
			continue
		}
		if err := r.Delete(ctx, obj, client.PropagationPolicy(metav1.DeletePropagationBackground)); client.IgnoreNotFound(err) != nil {
			return err
		}
		rounds[int32(n)] = true
	}
	// A round's prompts and hashes, its own or its candidates', go with
	// its pods.
	for n := range rounds {
		names := []string{roundConfigMapName(ar, n)}
		for k := int32(0); k < ar.Spec.Candidates && ar.Spec.Candidates > 1; k++ {
			names = append(names, promptConfigMapName(ar, round.Action{Round: n, Candidate: k, Candidates: ar.Spec.Candidates}))
		}
		for _, name := range names {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ar.Namespace, Name: name}}
			if err := r.Delete(ctx, cm); client.IgnoreNotFound(err) != nil {
				return err
			}
		}
	}
	return nil
}

// childFinished lets through only the child events that can move the loop:
// a step that ended, or a child that was deleted. The operator created the
// child itself, and every other status change would only wake the
// reconciler for nothing.
var childFinished = predicate.Funcs{
	CreateFunc:  func(event.CreateEvent) bool { return false },
	DeleteFunc:  func(event.DeleteEvent) bool { return true },
	GenericFunc: func(event.GenericEvent) bool { return false },
	UpdateFunc: func(e event.UpdateEvent) bool {
		return childDone(e.ObjectNew) && !childDone(e.ObjectOld) || evictedPod(e.ObjectNew) && !evictedPod(e.ObjectOld)
	},
}

// evictedPod is a pod the kubelet evicted: the condition that says so may
// come after the pod ended.
func evictedPod(obj client.Object) bool {
	pod, ok := obj.(*corev1.Pod)
	return ok && evictedByTheKubelet([]*corev1.Pod{pod}) != nil
}

// waitChanged lets through a pod whose reason to wait has changed: it
// started waiting (for the scheduler, a Secret, an image) or stopped.
var waitChanged = predicate.Funcs{
	CreateFunc:  func(event.CreateEvent) bool { return false },
	DeleteFunc:  func(event.DeleteEvent) bool { return false },
	GenericFunc: func(event.GenericEvent) bool { return false },
	UpdateFunc: func(e event.UpdateEvent) bool {
		pod, ok := e.ObjectNew.(*corev1.Pod)
		old, okOld := e.ObjectOld.(*corev1.Pod)
		return ok && okOld && waitReason([]*corev1.Pod{pod}) != waitReason([]*corev1.Pod{old})
	},
}

// jobPodExperiment is the experiment of a training or evaluation pod, by
// the labels its Job's template gave it.
func jobPodExperiment(_ context.Context, obj client.Object) []reconcile.Request {
	l := obj.GetLabels()
	if l["batch.kubernetes.io/job-name"] == "" || l[LabelExperiment] == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: obj.GetNamespace(), Name: l[LabelExperiment]}}}
}

func childDone(obj client.Object) bool {
	switch o := obj.(type) {
	case *corev1.Pod:
		return podFinished(o)
	case *batchv1.Job:
		return jobFinished(o)
	}
	return false
}

// CacheOptions keeps only the operator's own Pods and Jobs in the manager's
// cache, not every pod of the cluster. With watchNamespaces the cache, and
// so the controller, sees those namespaces alone: experiments elsewhere are
// never reconciled and nothing is created there, which lets the operator
// run with Roles in those namespaces instead of a ClusterRole. None means
// every namespace. Cached objects drop their managed fields, which the
// operator never reads, and cached children most of their specs
// (trimChild).
func CacheOptions(watchNamespaces []string) cache.Options {
	ours := cache.ByObject{Label: labels.SelectorFromSet(labels.Set{LabelManagedBy: ManagerName}), Transform: trimChild}
	opts := cache.Options{
		ByObject:         map[client.Object]cache.ByObject{&corev1.Pod{}: ours, &batchv1.Job{}: ours},
		DefaultTransform: cache.TransformStripManagedFields(),
	}
	if len(watchNamespaces) > 0 {
		opts.DefaultNamespaces = map[string]cache.Config{}
		for _, ns := range watchNamespaces {
			opts.DefaultNamespaces[ns] = cache.Config{}
		}
	}
	return opts
}

// trimChild keeps of a cached Pod or Job what the controller reads: its
// metadata but the managed fields, its status, and of its spec the
// containers' names, the volumes that claim a PVC and whether a Job is
// suspended. The operator only creates and deletes its children and never
// writes back one it read, so the rest of a spec (commands, environment,
// mounts, a Job's whole pod template), the largest part of every child of
// every experiment, need not stay in memory. It keeps a trimmed object as
// it is, for the informer may hand it one again.
func trimChild(obj any) (any, error) {
	switch o := obj.(type) {
	case *corev1.Pod:
		o.ManagedFields = nil
		o.Spec = corev1.PodSpec{InitContainers: containerNames(o.Spec.InitContainers), Containers: containerNames(o.Spec.Containers), Volumes: claimVolumes(o.Spec.Volumes)}
	case *batchv1.Job:
		o.ManagedFields = nil
		o.Spec = batchv1.JobSpec{Suspend: o.Spec.Suspend}
	}
	return obj, nil
}

func containerNames(cs []corev1.Container) []corev1.Container {
	var out []corev1.Container
	for _, c := range cs {
		out = append(out, corev1.Container{Name: c.Name})
	}
	return out
}

func claimVolumes(vs []corev1.Volume) []corev1.Volume {
	var out []corev1.Volume
	for _, v := range vs {
		if v.PersistentVolumeClaim != nil {
			out = append(out, corev1.Volume{Name: v.Name, VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: v.PersistentVolumeClaim}})
		}
	}
	return out
}

// SetupWithManager registers the controller and the owner index.
func (r *AutoResearchReconciler) SetupWithManager(mgr ctrl.Manager) error {
	r.reader = mgr.GetAPIReader()
	ctx := context.Background()
	index := func(obj client.Object) []string {
		owner := metav1.GetControllerOf(obj)
		if owner == nil || owner.APIVersion != v1alpha1.GroupVersion.String() || owner.Kind != "AutoResearch" {
			return nil
		}
		return []string{string(owner.UID)}
	}
	for _, obj := range []client.Object{&corev1.Pod{}, &batchv1.Job{}} {
		if err := mgr.GetFieldIndexer().IndexField(ctx, obj, ownerUIDKey, index); err != nil {
			return err
		}
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.AutoResearch{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Owns(&corev1.Pod{}, builder.WithPredicates(predicate.Or[client.Object](childFinished, waitChanged))).
		Owns(&batchv1.Job{}, builder.WithPredicates(childFinished)).
		// A Job's pod is the Job's, not the experiment's: it is watched only
		// to say why it waits and to read its result once it ended.
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(jobPodExperiment), builder.WithPredicates(predicate.Or[client.Object](childFinished, waitChanged))).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.concurrency}).
		Named("autoresearch").
		Complete(r)
}
