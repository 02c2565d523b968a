package protocol

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	yamlv3 "go.yaml.in/yaml/v3"
	"sigs.k8s.io/yaml"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
)

// TestScalarRoundTrip checks that every string, however it is written,
// reads back as the same string and not as a number, bool or null.
func TestScalarRoundTrip(t *testing.T) {
	cases := map[string]struct {
		in        string
		wantPlain bool
	}{
		"word":             {in: "val_bpb", wantPlain: true},
		"command":          {in: "python evaluate.py --steps 50", wantPlain: true},
		"module ref":       {in: "kernels.attention:flash", wantPlain: true},
		"duration":         {in: "5m0s", wantPlain: true},
		"question":         {in: "Does it work? Yes, it's fine!", wantPlain: true},
		"shell":            {in: `claude -p "$(cat "$F")" --tools Edit,Bash | tee log`, wantPlain: true},
		"brackets":         {in: "lr in [1e-4, 1e-2] {x}", wantPlain: true},
		"chinese":          {in: "调整学习率", wantPlain: true},
		"decimal":          {in: "0.95"},
		"exponent":         {in: "1e-5"},
		"integer":          {in: "30"},
		"hex":              {in: "0x1F"},
		"sexagesimal":      {in: "1:30"},
		"date":             {in: "2024-01-02"},
		"yes":              {in: "yes"},
		"On":               {in: "On"},
		"y":                {in: "y"},
		"null":             {in: "null"},
		"tilde":            {in: "~"},
		"inf":              {in: ".inf"},
		"empty":            {in: ""},
		"colon space":      {in: "a: b"},
		"trailing colon":   {in: "files:"},
		"comment":          {in: "a #b"},
		"dash":             {in: "- item"},
		"question mark":    {in: "? key"},
		"anchor":           {in: "&a"},
		"alias":            {in: "*a"},
		"tag":              {in: "!x"},
		"quote":            {in: `"quoted"`},
		"single quote":     {in: "'quoted'"},
		"block":            {in: "|"},
		"folded":           {in: ">"},
		"flow":             {in: "[a]"},
		"percent":          {in: "%x"},
		"at":               {in: "@x"},
		"backtick":         {in: "`x`"},
		"leading space":    {in: " x"},
		"trailing space":   {in: "x "},
		"tab":              {in: "a\tb"},
		"control":          {in: "a\x01b"},
		"line separator":   {in: "a\u2028b"},
		"next line":        {in: "a\u0085b"},
		"delete":           {in: "a\x7fb"},
		"c1 control":       {in: "a\u0090b"},
		"noncharacter":     {in: "a\ufffeb"},
		"bom":              {in: "\ufeffa"},
		"lines":            {in: "- one\n- two\n\n  three"},
		"lines end break":  {in: "one\ntwo\n"},
		"lines lead space": {in: "  one\ntwo"},
		"lines blank pad":  {in: "one\n  \ntwo"},
		"lines carriage":   {in: "one\r\ntwo"},
		"lines lead tab":   {in: "\tone\ntwo"},
		"lines separator":  {in: "one\ntwo\u2028three"},
		"backslash":        {in: `C:\path`, wantPlain: true},
		"merge key":        {in: "<<", wantPlain: true},
		"equals":           {in: "=", wantPlain: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			j, err := json.Marshal(map[string]string{"k": tc.in})
			if err != nil {
				t.Fatal(err)
			}
			n, err := decodeNode(json.NewDecoder(bytes.NewReader(j)))
			if err != nil {
				t.Fatal(err)
			}
			out, err := yamlv3.Marshal(n)
			if err != nil {
				t.Fatal(err)
			}
			var got map[string]any
			if err := yaml.Unmarshal(out, &got); err != nil {
				t.Fatalf("%q does not parse: %v", out, err)
			}
			if diff := cmp.Diff(map[string]any{"k": tc.in}, got); diff != "" {
				t.Errorf("%q reads back differently (-want +got):\n%s", out, diff)
			}
			if plain := string(out) == "k: "+tc.in+"\n"; plain != tc.wantPlain {
				t.Errorf("%q written as %q; plain = %v, want %v", tc.in, out, plain, tc.wantPlain)
			}
		})
	}
}

func TestYAMLComments(t *testing.T) {
	res := parse(t, protocol(map[string]string{
		"title":       "# Autoresearch Protocol",
		"metric":      "",
		"time_limit":  "- time_limit: soon",
		"epoch_limit": "",
		"extra":       "## Kernel Targets\n- name: k\n  new_module: a:b\n  baseline_module: c:d\n  fixture: e:f\n  atol: -1",
	}), nil)
	out, err := YAML(res, "exp/autoresearch-protocol.md")
	if err != nil {
		t.Fatal(err)
	}
	got := string(out)
	for _, want := range []string{
		"# AutoResearch imported from exp/autoresearch-protocol.md (current layout).\n" +
			"# 5 fields are missing: metadata.name, spec.fixed.timeLimit, spec.eval.metric, spec.kernelTargets[0].atol, spec.researcher.command. Fill them in before use.\n" +
			"# MISSING: metadata.name — not found in exp/autoresearch-protocol.md; fill it in\n" +
			"apiVersion: autoresearch.dev/v1alpha1\n",
		"    # MISSING: spec.fixed.timeLimit — \"soon\" is not a duration (write 5m, 300s or 1h30m); fill it in\n" +
			"    timeLimit: 0s\n",
		"    # MISSING: spec.eval.metric — not found in exp/autoresearch-protocol.md; fill it in\n" +
			"    metric: \"\"\n",
		"  kernelTargets:\n" +
			"  # MISSING: spec.kernelTargets[0].atol — \"-1\" is not a non-negative decimal number; fill it in\n" +
			"  - name: k\n",
		"    # inferred: spec.train.command: \"python train.py\" guessed from train.py",
		"    # MISSING: spec.researcher.command — the protocol format has no researcher.",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("YAML lacks\n%s\ngot:\n%s", want, got)
		}
	}
	if strings.Contains(got, "status") || strings.Contains(got, "creationTimestamp") || strings.Contains(got, "{}") {
		t.Errorf("YAML carries unset fields:\n%s", got)
	}
	assertRoundTrip(t, res, out)
}

func TestYAMLNeedsObject(t *testing.T) {
	if _, err := YAML(Result{}, "p.md"); err == nil {
		t.Error("YAML of a result without an object succeeded")
	}
}

// FuzzParse checks that any text parses without panicking and that the YAML
// of whatever it yields reads back as the same object.
func FuzzParse(f *testing.F) {
	for _, name := range []string{"current.md", "older.md", "partial.md"} {
		text, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(text))
	}
	f.Add(protocol(map[string]string{"range": "- 可调范围:\n  - lr: [1e-4, 1e-2]\n  - \"warmup\": yes"}))
	f.Add("# Autoresearch Protocol: x\nresearch_question: \"a: b\" # c\n## Eval\n- metric: null\n- command: |\n")
	f.Fuzz(func(t *testing.T, text string) {
		res, err := Parse(text, Repo{})
		if err != nil {
			return
		}
		out, err := YAML(res, "autoresearch-protocol.md")
		if err != nil {
			t.Fatal(err)
		}
		var back v1alpha1.AutoResearch
		if err := yaml.UnmarshalStrict(out, &back); err != nil {
			t.Fatalf("YAML does not read back: %v\n%s", err, out)
		}
		// The slots of missing fields read back as empty values; the slot
		// of a baseline value that is not a number, as an empty baseline.
		if b := back.Spec.Baseline; b != nil && res.Object.Spec.Baseline == nil && *b == (v1alpha1.BaselineSpec{}) {
			back.Spec.Baseline = nil
		}
		if diff := cmp.Diff(res.Object, &back, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("YAML reads back differently (-object +read back):\n%s\n%s", diff, out)
		}
	})
}
