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
	{v1alpha1.VerdictSuperseded, marker{draw.RingGlyph{}, green}},
	{v1alpha1.VerdictWithinNoise, marker{draw.RingGlyph{}, color.RGBA{R: 0xff, G: 0x8c, A: 0xff}}},
	{v1alpha1.VerdictNotImproved, marker{draw.RingGlyph{}, grey}},
	{v1alpha1.VerdictNoChange, marker{draw.SquareGlyph{}, grey}},
	{v1alpha1.VerdictStale, marker{draw.BoxGlyph{}, grey}},
	{v1alpha1.VerdictQueued, marker{draw.PlusGlyph{}, grey}},
	{v1alpha1.VerdictConflict, marker{draw.BoxGlyph{}, color.RGBA{R: 0xff, G: 0x8c, A: 0xff}}},
	{v1alpha1.VerdictComplianceFailed, marker{draw.TriangleGlyph{}, red}},
	{v1alpha1.VerdictParityFailed, marker{draw.PyramidGlyph{}, color.RGBA{R: 0x94, G: 0x67, B: 0xbd, A: 0xff}}},
	{v1alpha1.VerdictTrainFailed, marker{draw.CrossGlyph{}, red}},
	{v1alpha1.VerdictTrainTimeout, marker{draw.PlusGlyph{}, color.RGBA{R: 0x8c, G: 0x56, B: 0x4b, A: 0xff}}},
	{v1alpha1.VerdictEvalFailed, marker{draw.SquareGlyph{}, red}},
	{v1alpha1.VerdictConstraintFailed, marker{draw.RingGlyph{}, red}},
	{v1alpha1.VerdictOverfit, marker{draw.PyramidGlyph{}, red}},
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
	strip := r.axes(p)
	for _, add := range []func(*plot.Plot) error{r.addBaseline, r.addTarget, r.addStairs} {
		if err := add(p); err != nil {
			return nil, err
		}
	}
	if err := r.addRounds(p, strip); err != nil {
		return nil, err
	}
	return p, nil
}

// lastRound is the plot's last round, at least 1.
func (r Report) lastRound() float64 {
	last := 1.0
	for _, rd := range r.Rounds {
		last = math.Max(last, float64(rd.Round))
	}
	return last
}

// baseline returns the baseline value and its noise; ok is false without one.
func (r Report) baseline() (value, noise float64, ok bool) {
	if b := r.Baseline; b != nil {
		value, ok = number(b.Value)
		noise, _ = number(b.Stddev)
	}
	return value, noise, ok
}

// axes sets the ranges and ticks to hold every value, the baseline band
// and the target, and returns the height of the strip below the data where
// rounds without a value sit.
func (r Report) axes(p *plot.Plot) (strip float64) {
	lo, hi := math.Inf(1), math.Inf(-1)
	widen := func(v float64) { lo, hi = math.Min(lo, v), math.Max(hi, v) }
	for _, rd := range r.Rounds {
		if v, ok := number(rd.Value); ok {
			widen(v)
		}
	}
	if b, noise, ok := r.baseline(); ok {
		widen(b - noise)
		widen(b + noise)
	}
	if t, ok := number(r.Target); ok {
		widen(t)
	}
	if math.IsInf(lo, 0) {
		lo, hi = 0, 1
	}
	span := hi - lo
	if span == 0 {
		span = math.Max(math.Abs(hi), 1)
	}
	strip = lo - 0.08*span
	p.Y.Min, p.Y.Max = strip-0.04*span, hi+0.08*span
	last := r.lastRound()
	p.X.Min, p.X.Max = -0.5, last+0.5
	if last <= 30 {
		var ticks []plot.Tick
		for i := 0; i <= int(last); i++ {
			ticks = append(ticks, plot.Tick{Value: float64(i), Label: fmt.Sprint(i)})
		}
		p.X.Tick.Marker = plot.ConstantTicks(ticks)
	}
	return strip
}

// addBaseline draws the baseline and, when it was measured more than once
// with some spread, its ±1σ band.
func (r Report) addBaseline(p *plot.Plot) error {
	b, noise, ok := r.baseline()
	if !ok {
		return nil
	}
	if noise > 0 {
		band, err := plotter.NewPolygon(plotter.XYs{
			{X: p.X.Min, Y: b - noise}, {X: p.X.Max, Y: b - noise},
			{X: p.X.Max, Y: b + noise}, {X: p.X.Min, Y: b + noise},
		})
		if err != nil {
			return err
		}
		band.Color = color.RGBA{R: 0xdd, G: 0xdd, B: 0xdd, A: 0xff}
		band.LineStyle.Width = 0
		p.Add(band)
		p.Legend.Add("baseline noise (±1σ)", band)
	}
	line, err := horizontal(p, b, grey)
	if err != nil {
		return err
	}
	p.Legend.Add("baseline mean", line)
	return nil
}

func (r Report) addTarget(p *plot.Plot) error {
	t, ok := number(r.Target)
	if !ok {
		return nil
	}
	line, err := horizontal(p, t, color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff})
	if err != nil {
		return err
	}
	p.Legend.Add("target", line)
	return nil
}

// addStairs draws the running best through the kept rounds, each step
// labelled with its round and strategy.
func (r Report) addStairs(p *plot.Plot) error {
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
	if len(stairs) == 0 {
		return nil
	}
	stairs = append(stairs, plotter.XY{X: r.lastRound(), Y: stairs[len(stairs)-1].Y})
	line, err := plotter.NewLine(stairs)
	if err != nil {
		return err
	}
	line.StepStyle = plotter.PostStep
	line.Color = green
	line.Width = vg.Points(1.5)
	p.Add(line)
	p.Legend.Add("best so far", line)
	if len(kept.XYs) == 0 {
		return nil
	}
	labels, err := plotter.NewLabels(kept)
	if err != nil {
		return err
	}
	for i := range labels.TextStyle {
		labels.TextStyle[i].Font.Size = vg.Points(8)
		labels.TextStyle[i].Color = green
	}
	labels.Offset = vg.Point{X: vg.Points(4), Y: vg.Points(4)}
	p.Add(labels)
	return nil
}

// addRounds draws every round with its verdict's marker; rounds without a
// value sit on the strip.
func (r Report) addRounds(p *plot.Plot, strip float64) error {
	byVerdict := map[v1alpha1.Verdict]plotter.XYs{}
	var others plotter.XYs
	// A verdict whose rounds all sit on the strip says so in the legend.
	valued := map[v1alpha1.Verdict]bool{}
	for _, rd := range r.Rounds {
		v := v1alpha1.Verdict(rd.Verdict)
		y, ok := number(rd.Value)
		if !ok {
			y = strip
		}
		valued[v] = valued[v] || ok
		pt := plotter.XY{X: float64(rd.Round), Y: y}
		if _, known := markerOf(v); known {
			byVerdict[v] = append(byVerdict[v], pt)
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
			return err
		}
	}
	return scatter(p, "other failure", others, otherFailure)
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
