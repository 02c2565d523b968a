package report

import (
	"fmt"
	"image/color"
	"io"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
	"github.com/autoresearch-dev/autoresearch-operator/internal/text"
)

// The plot's size: 960×540 pixels at the PNG's 96 dots per inch.
const (
	PlotWidth  = 10 * vg.Inch
	PlotHeight = 5.625 * vg.Inch
)

// labelBytes is how much of a strategy a kept step's label shows.
const labelBytes = 36

// marker is how the plot draws a verdict.
type marker struct {
	shape draw.GlyphDrawer
	color color.RGBA
}

var (
	green = color.RGBA{R: 0x1b, G: 0x9e, B: 0x3e, A: 0xff}
	grey  = color.RGBA{R: 0x80, G: 0x80, B: 0x80, A: 0xff}
	red   = color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}
)

// markers are in legend order; a verdict not listed is drawn as a failure.
var markers = []struct {
	verdict v1alpha1.Verdict
	marker
}{
	{v1alpha1.VerdictBaseline, marker{draw.BoxGlyph{}, color.RGBA{A: 0xff}}},
	{v1alpha1.VerdictImproved, marker{draw.CircleGlyph{}, green}},
	{v1alpha1.VerdictWithinNoise, marker{draw.RingGlyph{}, color.RGBA{R: 0xff, G: 0x8c, A: 0xff}}},
	{v1alpha1.VerdictNotImproved, marker{draw.RingGlyph{}, grey}},
	{v1alpha1.VerdictNoChange, marker{draw.SquareGlyph{}, grey}},
	{v1alpha1.VerdictComplianceFailed, marker{draw.TriangleGlyph{}, red}},
	{v1alpha1.VerdictParityFailed, marker{draw.PyramidGlyph{}, color.RGBA{R: 0x94, G: 0x67, B: 0xbd, A: 0xff}}},
	{v1alpha1.VerdictTrainFailed, marker{draw.CrossGlyph{}, red}},
	{v1alpha1.VerdictTrainTimeout, marker{draw.PlusGlyph{}, color.RGBA{R: 0x8c, G: 0x56, B: 0x4b, A: 0xff}}},
	{v1alpha1.VerdictEvalFailed, marker{draw.SquareGlyph{}, red}},
	{v1alpha1.VerdictResearcherFailed, marker{draw.CrossGlyph{}, color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}}},
}

var otherFailure = marker{draw.CrossGlyph{}, color.RGBA{R: 0x40, G: 0x40, B: 0x40, A: 0xff}}

// Plot draws the metric per round: every round as a dot styled by its
// verdict, rounds without a value on a strip below the data, the running
// best as a staircase through the kept rounds, each kept step labelled
// with its strategy, the baseline with its noise band and the target.
func (r Report) Plot() (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("%s: %s per round", r.Experiment, r.Metric)
	p.X.Label.Text = "round"
	p.Y.Label.Text = r.Metric
	switch r.Direction {
	case v1alpha1.DirectionMinimize:
		p.Y.Label.Text += " (lower is better)"
	case v1alpha1.DirectionMaximize:
		p.Y.Label.Text += " (higher is better)"
	}
	p.Legend.Top = true
	p.Legend.Padding = vg.Points(2)
	p.Add(plotter.NewGrid())

	lastRound := 1.0
	lo, hi := math.Inf(1), math.Inf(-1)
	widen := func(v float64) { lo, hi = math.Min(lo, v), math.Max(hi, v) }
	for _, rd := range r.Rounds {
		lastRound = math.Max(lastRound, float64(rd.Round))
		if v, ok := number(rd.Value); ok {
			widen(v)
		}
	}
	baseline, haveBaseline := 0.0, false
	noise := 0.0
	if b := r.Baseline; b != nil {
		baseline, haveBaseline = number(b.Value)
		noise, _ = number(b.Stddev)
	}
	target, haveTarget := number(r.Target)
	if haveBaseline {
		widen(baseline - noise)
		widen(baseline + noise)
	}
	if haveTarget {
		widen(target)
	}
	if math.IsInf(lo, 0) {
		lo, hi = 0, 1
	}
	span := hi - lo
	if span == 0 {
		span = math.Max(math.Abs(hi), 1)
	}
	// Rounds without a value sit on a strip below the data.
	strip := lo - 0.08*span
	p.Y.Min, p.Y.Max = strip-0.04*span, hi+0.08*span
	p.X.Min, p.X.Max = -0.5, lastRound+0.5
	if lastRound <= 30 {
		var ticks []plot.Tick
		for i := 0; i <= int(lastRound); i++ {
			ticks = append(ticks, plot.Tick{Value: float64(i), Label: fmt.Sprint(i)})
		}
		p.X.Tick.Marker = plot.ConstantTicks(ticks)
	}

	if haveBaseline {
		if noise > 0 {
			band, err := plotter.NewPolygon(plotter.XYs{
				{X: p.X.Min, Y: baseline - noise}, {X: p.X.Max, Y: baseline - noise},
				{X: p.X.Max, Y: baseline + noise}, {X: p.X.Min, Y: baseline + noise},
			})
			if err != nil {
				return nil, err
			}
			band.Color = color.RGBA{R: 0xdd, G: 0xdd, B: 0xdd, A: 0xff}
			band.LineStyle.Width = 0
			p.Add(band)
			p.Legend.Add("baseline noise (±1σ)", band)
		}
		line, err := horizontal(p, baseline, grey)
		if err != nil {
			return nil, err
		}
		p.Legend.Add("baseline mean", line)
	}
	if haveTarget {
		line, err := horizontal(p, target, color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff})
		if err != nil {
			return nil, err
		}
		p.Legend.Add("target", line)
	}

	var stairs plotter.XYs
	var kept plotter.XYLabels
	for _, rd := range r.Rounds {
		v, ok := number(rd.BestSoFar)
		if !ok {
			continue
		}
		if len(stairs) == 0 || rd.Kept {
			stairs = append(stairs, plotter.XY{X: float64(rd.Round), Y: v})
		}
		if rd.Kept {
			kept.XYs = append(kept.XYs, plotter.XY{X: float64(rd.Round), Y: v})
			kept.Labels = append(kept.Labels, fmt.Sprintf("R%d %s", rd.Round, text.Truncate(rd.Strategy, labelBytes)))
		}
	}
	if len(stairs) > 0 {
		stairs = append(stairs, plotter.XY{X: lastRound, Y: stairs[len(stairs)-1].Y})
		line, err := plotter.NewLine(stairs)
		if err != nil {
			return nil, err
		}
		line.StepStyle = plotter.PostStep
		line.Color = green
		line.Width = vg.Points(1.5)
		p.Add(line)
		p.Legend.Add("best so far", line)
	}

	byVerdict := map[v1alpha1.Verdict]plotter.XYs{}
	var others plotter.XYs
	// A verdict whose rounds all sit on the strip says so in the legend.
	valued := map[v1alpha1.Verdict]bool{}
	for _, rd := range r.Rounds {
		y, ok := number(rd.Value)
		if !ok {
			y = strip
		}
		valued[v1alpha1.Verdict(rd.Verdict)] = valued[v1alpha1.Verdict(rd.Verdict)] || ok
		pt := plotter.XY{X: float64(rd.Round), Y: y}
		if _, known := markerOf(v1alpha1.Verdict(rd.Verdict)); known {
			byVerdict[v1alpha1.Verdict(rd.Verdict)] = append(byVerdict[v1alpha1.Verdict(rd.Verdict)], pt)
		} else {
			others = append(others, pt)
		}
	}
	for _, m := range markers {
		name := string(m.verdict)
		if !valued[m.verdict] {
			name += " (no value)"
		}
		if err := scatter(p, name, byVerdict[m.verdict], m.marker); err != nil {
			return nil, err
		}
	}
	if err := scatter(p, "other failure", others, otherFailure); err != nil {
		return nil, err
	}

	if len(kept.XYs) > 0 {
		labels, err := plotter.NewLabels(kept)
		if err != nil {
			return nil, err
		}
		for i := range labels.TextStyle {
			labels.TextStyle[i].Font.Size = vg.Points(8)
			labels.TextStyle[i].Color = green
		}
		labels.Offset = vg.Point{X: vg.Points(4), Y: vg.Points(4)}
		p.Add(labels)
	}
	return p, nil
}

func markerOf(v v1alpha1.Verdict) (marker, bool) {
	for _, m := range markers {
		if m.verdict == v {
			return m.marker, true
		}
	}
	return otherFailure, false
}

// horizontal adds a dashed line across the plot at y.
func horizontal(p *plot.Plot, y float64, c color.Color) (*plotter.Line, error) {
	line, err := plotter.NewLine(plotter.XYs{{X: p.X.Min, Y: y}, {X: p.X.Max, Y: y}})
	if err != nil {
		return nil, err
	}
	line.Color = c
	line.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	p.Add(line)
	return line, nil
}

// scatter adds the points of one verdict, and its legend entry, when there
// are any.
func scatter(p *plot.Plot, name string, pts plotter.XYs, m marker) error {
	if len(pts) == 0 {
		return nil
	}
	s, err := plotter.NewScatter(pts)
	if err != nil {
		return err
	}
	s.Shape = m.shape
	s.Color = m.color
	s.Radius = vg.Points(4)
	p.Add(s)
	p.Legend.Add(name, s)
	return nil
}

// WritePlot renders the plot as "png" or "svg".
func (r Report) WritePlot(w io.Writer, format string) error {
	p, err := r.Plot()
	if err != nil {
		return err
	}
	wt, err := p.WriterTo(PlotWidth, PlotHeight, format)
	if err != nil {
		return err
	}
	_, err = wt.WriteTo(w)
	return err
}
