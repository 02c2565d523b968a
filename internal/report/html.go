package report

import (
	"encoding/base64"
	"html/template"
	"io"

	"github.com/autoresearch-dev/autoresearch-operator/internal/text"
)

var page = template.Must(template.New("report").Funcs(template.FuncMap{
	"short": text.ShortCommit,
	"line":  oneLine,
	"dash":  orDash,
}).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{{.R.Experiment}}: research report</title>
<style>
body { font-family: system-ui, sans-serif; max-width: 72rem; margin: 2rem auto; padding: 0 1rem; color: #222; }
table { border-collapse: collapse; width: 100%; font-size: 0.9rem; }
th, td { border: 1px solid #ccc; padding: 0.25rem 0.5rem; text-align: left; vertical-align: top; }
tr.kept { background: #e9f6ec; }
pre { background: #f6f8fa; padding: 0.75rem; overflow-x: auto; font-size: 0.85rem; }
img { max-width: 100%; }
</style>
</head>
<body>
<h1>{{.R.Experiment}}: research report</h1>
<p><strong>Question:</strong> {{line .R.ResearchQuestion}}</p>
<h2>Outcome</h2>
<ul>{{range .Outcome}}
<li>{{.}}</li>{{end}}
</ul>
<img alt="{{.R.Metric}} per round" src="{{.Plot}}">
<h2>Rounds</h2>
<table>
<tr><th>Round</th><th>Verdict</th><th>{{.R.Metric}}</th><th>Best so far</th>{{if .R.HoldoutMetric}}<th>Holdout {{.R.HoldoutMetric}}</th>{{end}}<th>Strategy</th><th>Insight</th></tr>{{range .R.Rounds}}
<tr{{if .Kept}} class="kept"{{end}}><td>{{.Label}}</td><td>{{.Verdict}}</td><td>{{dash .Value}}</td><td>{{dash .BestSoFar}}</td>{{if $.R.HoldoutMetric}}<td>{{dash .Holdout}}</td>{{end}}<td>{{dash .Strategy}}</td><td>{{dash .Insight}}</td></tr>{{end}}
</table>
<h2>Kept changes</h2>{{range .R.Rounds}}{{if .Kept}}
<h3>Round {{.Label}}: {{line .Strategy}}</h3>
<p>{{$.R.Metric}}={{.Value}}, commit {{dash (short .Commit)}}.</p>
{{if .Diff}}<pre>{{.Diff}}</pre>{{else}}<p>No diff: the status history no longer holds this round's commits.</p>{{end}}{{end}}{{else}}
<p>No round improved on the baseline.</p>{{end}}
{{if .Insights}}<h2>Insights</h2>
<ul>{{range .Insights}}
<li>{{.}}</li>{{end}}
</ul>{{end}}
{{if .R.Guidance}}<h2>Guidance</h2>
<ul>{{range .R.Guidance}}
<li>{{line .}}</li>{{end}}
</ul>{{end}}
<h2>Usage</h2>
<ul>{{range .Usage}}
<li>{{.}}</li>{{end}}
</ul>
</body>
</html>
`))

// HTML writes report.html, self-contained: the PNG plot is embedded as a
// data URI.
func (r Report) HTML(w io.Writer, png []byte) error {
	return page.Execute(w, struct {
		R                        Report
		Outcome, Insights, Usage []string
		Plot                     template.URL
	}{
		R: r, Outcome: r.outcome(), Insights: r.insights(), Usage: r.usage(),
		// The PNG is ours, encoded here: a safe URL.
		Plot: template.URL("data:image/png;base64," + base64.StdEncoding.EncodeToString(png)), //nolint:gosec // see above
	})
}
