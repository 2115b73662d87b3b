// Command render executes a Helm chart's templates the way `helm template` does, without helm:
// Go's text/template with the sprig function library and Helm's own functions (include, tpl,
// required, toYaml, fromYaml, toJson, fromJson, lookup), the chart's values coalesced with the
// given values files, and the built-in objects Release, Chart, Capabilities and Template.
// deploy/test/helm-chart.test.ts builds it with Debian's Go and sprig and validates the output.
//
//	render [-f values.yaml]... [-release NAME] [-namespace NS] [-kube-version v1.31.0] CHART_DIR
//
// It prints JSON: {"manifests": [{"source": "loom/templates/x.yaml", "content": "..."}], "notes": "...",
// "values": the coalesced values the templates saw}.
// What it does not do: dependencies (subcharts), .Files, the values schema (checked by the
// test), post-renderers, hooks ordering, and lookup against a cluster (it returns an empty map,
// as `helm template` does).
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/template"

	"github.com/Masterminds/semver"
	"github.com/Masterminds/sprig"
	"sigs.k8s.io/yaml"
)

type valueFiles []string

func (v *valueFiles) String() string     { return strings.Join(*v, ",") }
func (v *valueFiles) Set(s string) error { *v = append(*v, s); return nil }

type manifest struct {
	Source  string `json:"source"`
	Content string `json:"content"`
}

type output struct {
	Manifests []manifest             `json:"manifests"`
	Notes     string                 `json:"notes"`
	Values    map[string]interface{} `json:"values"`
}

// kubeVersion is .Capabilities.KubeVersion.
type kubeVersion struct {
	Version    string
	Major      string
	Minor      string
	GitVersion string
}

// apiVersions is .Capabilities.APIVersions.
type apiVersions []string

// Has reports whether a group/version (or group/version/kind) is available.
func (a apiVersions) Has(version string) bool {
	for _, v := range a {
		if v == version {
			return true
		}
	}
	return false
}

func main() {
	var files valueFiles
	flag.Var(&files, "f", "values file (repeatable; later files win)")
	release := flag.String("release", "loom", "release name")
	namespace := flag.String("namespace", "default", "release namespace")
	kube := flag.String("kube-version", "v1.31.0", "Kubernetes version the templates see")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: render [-f values.yaml]... [-release NAME] [-namespace NS] CHART_DIR")
		os.Exit(2)
	}
	out, err := render(flag.Arg(0), files, *release, *namespace, *kube)
	if err != nil {
		fmt.Fprintf(os.Stderr, "Error: %v\n", err)
		os.Exit(1)
	}
	encoder := json.NewEncoder(os.Stdout)
	encoder.SetEscapeHTML(false)
	if err := encoder.Encode(out); err != nil {
		fmt.Fprintf(os.Stderr, "Error: %v\n", err)
		os.Exit(1)
	}
}

func readYAML(path string) (map[string]interface{}, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	values := map[string]interface{}{}
	if err := yaml.Unmarshal(data, &values); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return values, nil
}

// coalesce merges override into base as Helm does for values: maps merge deeply, anything
// else replaces, and a null in the override deletes the key.
func coalesce(base, override map[string]interface{}) map[string]interface{} {
	for key, value := range override {
		if value == nil {
			delete(base, key)
			continue
		}
		overrideMap, isMap := value.(map[string]interface{})
		baseMap, baseIsMap := base[key].(map[string]interface{})
		if isMap && baseIsMap {
			base[key] = coalesce(baseMap, overrideMap)
		} else {
			base[key] = value
		}
	}
	return base
}

func toYAML(v interface{}) string {
	data, err := yaml.Marshal(v)
	if err != nil {
		return ""
	}
	return strings.TrimSuffix(string(data), "\n")
}

func fromYAML(text string) map[string]interface{} {
	m := map[string]interface{}{}
	if err := yaml.Unmarshal([]byte(text), &m); err != nil {
		m["Error"] = err.Error()
	}
	return m
}

func toJSON(v interface{}) string {
	data, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	return string(data)
}

func fromJSON(text string) map[string]interface{} {
	m := map[string]interface{}{}
	if err := json.Unmarshal([]byte(text), &m); err != nil {
		m["Error"] = err.Error()
	}
	return m
}

func required(message string, value interface{}) (interface{}, error) {
	if value == nil {
		return nil, errors.New(message)
	}
	if s, ok := value.(string); ok && s == "" {
		return nil, errors.New(message)
	}
	return value, nil
}

const recursionLimit = 1000

func render(chartDir string, files []string, release, namespace, kube string) (*output, error) {
	chart, err := readYAML(filepath.Join(chartDir, "Chart.yaml"))
	if err != nil {
		return nil, err
	}
	chartName, _ := chart["name"].(string)
	if constraint, ok := chart["kubeVersion"].(string); ok && constraint != "" {
		c, err := semver.NewConstraint(constraint)
		if err != nil {
			return nil, fmt.Errorf("Chart.yaml kubeVersion: %w", err)
		}
		v, err := semver.NewVersion(kube)
		if err != nil {
			return nil, err
		}
		if !c.Check(v) {
			return nil, fmt.Errorf("chart requires kubeVersion: %s which is incompatible with Kubernetes %s", constraint, kube)
		}
	}
	values, err := readYAML(filepath.Join(chartDir, "values.yaml"))
	if err != nil {
		return nil, err
	}
	for _, file := range files {
		override, err := readYAML(file)
		if err != nil {
			return nil, err
		}
		values = coalesce(values, override)
	}

	v, _ := semver.NewVersion(kube)
	top := map[string]interface{}{
		"Values": values,
		"Release": map[string]interface{}{
			"Name": release, "Namespace": namespace, "Service": "Helm", "IsInstall": true, "IsUpgrade": false, "Revision": 1,
		},
		"Chart": map[string]interface{}{
			"Name": chartName, "Version": chart["version"], "AppVersion": chart["appVersion"], "Description": chart["description"],
		},
		"Capabilities": map[string]interface{}{
			"KubeVersion": kubeVersion{Version: kube, Major: fmt.Sprint(v.Major()), Minor: fmt.Sprint(v.Minor()), GitVersion: kube},
			"APIVersions": apiVersions{"v1", "apps/v1", "networking.k8s.io/v1", "policy/v1", "autoscaling/v2", "batch/v1"},
		},
	}

	root := template.New("chart")
	funcs := sprig.TxtFuncMap()
	delete(funcs, "env")
	delete(funcs, "expandenv")
	depth := map[string]int{}
	funcs["toYaml"] = toYAML
	funcs["fromYaml"] = fromYAML
	funcs["toJson"] = toJSON
	funcs["fromJson"] = fromJSON
	funcs["required"] = required
	funcs["lookup"] = func(apiVersion, kind, namespace, name string) (map[string]interface{}, error) {
		return map[string]interface{}{}, nil
	}
	funcs["include"] = func(name string, data interface{}) (string, error) {
		depth[name]++
		defer func() { depth[name]-- }()
		if depth[name] > recursionLimit {
			return "", fmt.Errorf("rendering template has a nested reference name: %s", name)
		}
		var buf bytes.Buffer
		if err := root.ExecuteTemplate(&buf, name, data); err != nil {
			return "", err
		}
		return buf.String(), nil
	}
	funcs["tpl"] = func(text string, data interface{}) (string, error) {
		t, err := root.Clone()
		if err != nil {
			return "", err
		}
		t, err = t.New("tpl").Parse(text)
		if err != nil {
			return "", err
		}
		var buf bytes.Buffer
		if err := t.Execute(&buf, data); err != nil {
			return "", err
		}
		return buf.String(), nil
	}
	root.Funcs(funcs).Option("missingkey=zero")

	templateDir := filepath.Join(chartDir, "templates")
	entries, err := os.ReadDir(templateDir)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, entry := range entries {
		if entry.IsDir() {
			continue
		}
		text, err := os.ReadFile(filepath.Join(templateDir, entry.Name()))
		if err != nil {
			return nil, err
		}
		name := chartName + "/templates/" + entry.Name()
		if _, err := root.New(name).Parse(string(text)); err != nil {
			return nil, err
		}
		names = append(names, name)
	}
	sort.Strings(names)

	out := &output{Manifests: []manifest{}, Values: values}
	for _, name := range names {
		base := filepath.Base(name)
		if strings.HasPrefix(base, "_") {
			continue
		}
		data := map[string]interface{}{}
		for key, value := range top {
			data[key] = value
		}
		data["Template"] = map[string]interface{}{"Name": name, "BasePath": chartName + "/templates"}
		var buf bytes.Buffer
		if err := root.ExecuteTemplate(&buf, name, data); err != nil {
			return nil, err
		}
		content := strings.ReplaceAll(buf.String(), "<no value>", "")
		if base == "NOTES.txt" {
			out.Notes = content
			continue
		}
		if !strings.HasSuffix(base, ".yaml") && !strings.HasSuffix(base, ".yml") {
			continue
		}
		if strings.TrimSpace(content) == "" {
			continue
		}
		out.Manifests = append(out.Manifests, manifest{Source: name, Content: content})
	}
	return out, nil
}
