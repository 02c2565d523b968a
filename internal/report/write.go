package report

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"

	"github.com/autoresearch-dev/autoresearch-operator/internal/workspace"
)

// The files Write writes.
const (
	PlotPNG     = "progress.png"
	PlotSVG     = "progress.svg"
	MarkdownMD  = "report.md"
	HTMLFile    = "report.html"
	ResultsJSON = "results.json"
)

// Write writes the report's files into dir, creating it, and returns their
// paths.
func (r Report) Write(dir string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var png, svg bytes.Buffer
	if err := r.WritePlot(&png, "png"); err != nil {
		return nil, err
	}
	if err := r.WritePlot(&svg, "svg"); err != nil {
		return nil, err
	}
	var page bytes.Buffer
	if err := r.HTML(&page, png.Bytes()); err != nil {
		return nil, err
	}
	results, err := r.JSON()
	if err != nil {
		return nil, err
	}
	files := []struct {
		name string
		data []byte
	}{
		{PlotPNG, png.Bytes()}, {PlotSVG, svg.Bytes()}, {MarkdownMD, []byte(r.Markdown(PlotPNG))},
		{HTMLFile, page.Bytes()}, {ResultsJSON, results},
	}
	var paths []string
	for _, f := range files {
		path := filepath.Join(dir, f.name)
		if err := workspace.WriteFileAtomic(path, f.data); err != nil {
			return nil, err
		}
		paths = append(paths, path)
	}
	return paths, nil
}

// JSON is results.json: the report, indented.
func (r Report) JSON() ([]byte, error) {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(data, '\n'), nil
}
