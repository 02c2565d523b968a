package manifests

import (
	"os"
	"sort"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// Every value of values.yaml is declared in values.schema.json and every
// property the schema declares is a value: helm checks the values a user
// sets against the schema, which refuses names it does not know, so a value
// it lacks could not be set and a property values.yaml lacks is stale.
func TestValuesSchemaCoversEveryValue(t *testing.T) {
	var values, schema map[string]any
	for path, into := range map[string]*map[string]any{chartDir + "/values.yaml": &values, chartDir + "/values.schema.json": &schema} {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := yaml.Unmarshal(data, into); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
	}
	if schema["additionalProperties"] != false {
		t.Errorf("the schema's top level allows values it does not name: set additionalProperties to false")
	}
	for _, problem := range compareWithSchema("", values, schema) {
		t.Error(problem)
	}
}

// compareWithSchema lists where value, at path, and the schema node
// describing it disagree on which names exist. A node without properties
// is a free-form object, such as labels or a securityContext.
func compareWithSchema(path string, value any, node map[string]any) []string {
	m, ok := value.(map[string]any)
	if !ok {
		return nil
	}
	props, ok := node["properties"].(map[string]any)
	if !ok {
		if node["type"] != "object" {
			return []string{path + " is an object in values.yaml, but the schema does not say so"}
		}
		return nil
	}
	var problems []string
	for key, v := range m {
		sub, ok := props[key].(map[string]any)
		if !ok {
			problems = append(problems, path+"."+key+" is in values.yaml but not in values.schema.json")
			continue
		}
		problems = append(problems, compareWithSchema(path+"."+key, v, sub)...)
	}
	for key := range props {
		if _, ok := m[key]; !ok {
			problems = append(problems, path+"."+key+" is in values.schema.json but not in values.yaml")
		}
	}
	sort.Strings(problems)
	return problems
}

// The schema refuses values of the wrong type or shape before anything is
// rendered.
func TestValuesSchemaRefusesBadValues(t *testing.T) {
	helm := helmBinary(t)
	cases := map[string][]string{
		"replicas as a string":                {"--set-string", "replicas=2"},
		"a misspelt value":                    {"--set", "replica=2"},
		"a watched namespace that is no name": {"--set", "watchNamespaces={Team_A}"},
		"an unknown log level":                {"--set", "logLevel=verbose"},
		"an unknown pull policy":              {"--set", "image.pullPolicy=Sometimes"},
		"a quantity that is not one":          {"--set", "stepResources.requests.cpu=lots"},
		"a digest that is not one":            {"--set", "image.digest=latest"},
		"a port out of range":                 {"--set", "metrics.port=70000"},
		"serviceMonitor as a flag":            {"--set", "serviceMonitor=true"},
	}
	if _, err := renderChart(helm, release); err != nil {
		t.Fatalf("the defaults: %v", err)
	}
	for name, args := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := renderChart(helm, release, args...)
			if err == nil {
				t.Fatalf("helm rendered the chart with %v; want the schema to refuse it", args)
			}
			if !strings.Contains(err.Error(), "values don't meet the specifications of the schema") {
				t.Errorf("helm refused %v, but not for the schema: %v", args, err)
			}
		})
	}
}
