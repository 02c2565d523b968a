package main

import (
	"crypto/tls"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/autoresearch-dev/autoresearch-operator/controllers"
)

func TestParseOptions(t *testing.T) {
	defaults := options{
		metricsAddr:      ":8443",
		metricsSecure:    true,
		probeAddr:        ":8081",
		leaderElect:      true,
		leaderElectionID: "autoresearch-operator.autoresearch.dev",
		concurrency:      4,
		kubeAPIQPS:       50,
		kubeAPIBurst:     100,
		stepResources:    controllers.DefaultStepResources(),
	}
	with := func(change func(*options)) *options {
		o := defaults
		change(&o)
		return &o
	}
	cases := map[string]struct {
		args    []string
		env     map[string]string
		want    *options
		wantErr bool
	}{
		"image from the environment": {
			env:  map[string]string{imageEnv: "ghcr.io/example/op:v1"},
			want: with(func(o *options) { o.image = "ghcr.io/example/op:v1" }),
		},
		"flag overrides the environment": {
			args: []string{"--image=registry.local/op:dev"},
			env:  map[string]string{imageEnv: "ghcr.io/example/op:v1"},
			want: with(func(o *options) { o.image = "registry.local/op:dev" }),
		},
		"no image": {
			wantErr: true,
		},
		"empty image flag clears the environment": {
			args:    []string{"--image="},
			env:     map[string]string{imageEnv: "ghcr.io/example/op:v1"},
			wantErr: true,
		},
		"metrics off, leader election off, plain HTTP with HTTP/2": {
			args: []string{
				"--image=op", "--metrics-bind-address=0", "--metrics-secure=false", "--enable-http2",
				"--leader-elect=false", "--leader-election-namespace=ops", "--leader-election-id=other",
				"--health-probe-bind-address=:9090", "--metrics-cert-dir=/certs",
				"--max-concurrent-reconciles=8", "--kube-api-qps=200", "--kube-api-burst=400",
			},
			want: &options{
				metricsAddr:             "0",
				metricsCertDir:          "/certs",
				probeAddr:               ":9090",
				leaderElectionID:        "other",
				leaderElectionNamespace: "ops",
				enableHTTP2:             true,
				image:                   "op",
				concurrency:             8,
				kubeAPIQPS:              200,
				kubeAPIBurst:            400,
				stepResources:           controllers.DefaultStepResources(),
			},
		},
		"step resources": {
			args: []string{"--image=op", `--step-resources={"requests":{"cpu":"50m","memory":"64Mi"},"limits":{"memory":"256Mi"}}`},
			want: with(func(o *options) {
				o.image = "op"
				o.stepResources = corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
					Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")},
				}
			}),
		},
		"step resources that are not JSON": {
			args:    []string{"--image=op", "--step-resources=cpu=1"},
			wantErr: true,
		},
		"step resources with an unknown field": {
			args:    []string{"--image=op", `--step-resources={"request":{"cpu":"1"}}`},
			wantErr: true,
		},
		"a step request above its limit": {
			args:    []string{"--image=op", `--step-resources={"requests":{"cpu":"2"},"limits":{"cpu":"1"}}`},
			wantErr: true,
		},
		"watched namespaces": {
			args: []string{"--image=op", "--watch-namespaces= team-a,team-b,,"},
			want: with(func(o *options) {
				o.image = "op"
				o.watchNamespaces = []string{"team-a", "team-b"}
			}),
		},
		"an empty namespace list watches every namespace": {
			args: []string{"--image=op", "--watch-namespaces="},
			want: with(func(o *options) { o.image = "op" }),
		},
		"a watched namespace that is no namespace name": {
			args:    []string{"--image=op", "--watch-namespaces=team-a,Team_B"},
			wantErr: true,
		},
		"--version needs no image": {
			args: []string{"--version"},
			want: with(func(o *options) { o.printVersion = true }),
		},
		"zap flags are accepted": {
			args: []string{"--image=op", "--zap-log-level=debug", "--zap-devel"},
			want: with(func(o *options) { o.image = "op" }),
		},
		"unknown flag": {
			args:    []string{"--image=op", "--webhook-port=9443"},
			wantErr: true,
		},
		"stray argument": {
			args:    []string{"--image=op", "extra"},
			wantErr: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := parseOptions(tc.args, func(k string) string { return tc.env[k] })
			if (err != nil) != tc.wantErr {
				t.Fatalf("parseOptions() error = %v, wantErr %v", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(options{}), cmpopts.IgnoreFields(options{}, "zap")); diff != "" {
				t.Errorf("parseOptions() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestManagerOptions(t *testing.T) {
	cases := map[string]struct {
		args           []string
		wantFilter     bool
		wantNextProtos []string
		// wantNamespaces are the namespaces the cache holds; none means all.
		wantNamespaces []string
	}{
		"defaults: authenticated HTTPS without HTTP/2": {
			args:           []string{"--image=op"},
			wantFilter:     true,
			wantNextProtos: []string{"http/1.1"},
		},
		"plain HTTP with HTTP/2": {
			args:           []string{"--image=op", "--metrics-secure=false", "--enable-http2"},
			wantNextProtos: []string{"h2", "http/1.1"},
		},
		"watched namespaces": {
			args:           []string{"--image=op", "--watch-namespaces=team-a,team-b"},
			wantFilter:     true,
			wantNextProtos: []string{"http/1.1"},
			wantNamespaces: []string{"team-a", "team-b"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			o, err := parseOptions(tc.args, func(string) string { return "" })
			if err != nil {
				t.Fatal(err)
			}
			scheme, err := newScheme()
			if err != nil {
				t.Fatal(err)
			}
			got := managerOptions(o, scheme)

			if hasFilter := got.Metrics.FilterProvider != nil; hasFilter != tc.wantFilter {
				t.Errorf("metrics FilterProvider set = %v, want %v", hasFilter, tc.wantFilter)
			}
			cfg := &tls.Config{NextProtos: []string{"h2", "http/1.1"}}
			for _, opt := range got.Metrics.TLSOpts {
				opt(cfg)
			}
			if diff := cmp.Diff(tc.wantNextProtos, cfg.NextProtos); diff != "" {
				t.Errorf("metrics TLS NextProtos mismatch (-want +got):\n%s", diff)
			}
			var namespaces []string
			for ns := range got.Cache.DefaultNamespaces {
				namespaces = append(namespaces, ns)
			}
			if diff := cmp.Diff(tc.wantNamespaces, namespaces, cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
				t.Errorf("cached namespaces mismatch (-want +got):\n%s", diff)
			}
			if !got.LeaderElection || got.LeaderElectionID != "autoresearch-operator.autoresearch.dev" {
				t.Errorf("leader election = %v with ID %q, want on with the default ID", got.LeaderElection, got.LeaderElectionID)
			}
		})
	}
}

func TestNewSchemeKnowsTheManagedKinds(t *testing.T) {
	scheme, err := newScheme()
	if err != nil {
		t.Fatal(err)
	}
	for _, gvk := range []schema.GroupVersionKind{
		{Group: "autoresearch.dev", Version: "v1alpha1", Kind: "AutoResearch"},
		{Version: "v1", Kind: "Pod"},
		{Version: "v1", Kind: "PersistentVolumeClaim"},
		{Version: "v1", Kind: "ConfigMap"},
		{Group: "batch", Version: "v1", Kind: "Job"},
	} {
		if !scheme.Recognizes(gvk) {
			t.Errorf("scheme does not recognize %s", gvk)
		}
	}
}
