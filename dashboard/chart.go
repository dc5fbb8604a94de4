package dashboard

import (
	"math"
	"strconv"
	"strings"
	"time"
)

// The charts are drawn on the server as inline SVG (ADR 0022): the
// geometry is computed here, once, for the template and for the live
// events alike, so the page's script only copies attributes and text.
// Every chart has the same frame: two panels over one time axis, the
// succeeded jobs above and the dead-lettered ones below, each with a
// scale of its own, so that a handful of dead letters beside thousands of
// successes is still seen.

// Chart frame, in SVG user units (the viewBox is chartWidth x chartHeight).
const (
	chartWidth  = 720
	chartHeight = 252
	plotLeft    = 64  // y labels to the left of it
	plotRight   = 708 // chartWidth minus a margin
	plotWidth   = plotRight - plotLeft
	panelHeight = 80
	xLabelY     = 230 // the time labels under the lower panel
	xTitleY     = 248 // the time axis' title
)

// panelTops are the top edges of the two panels; each is panelHeight tall.
var panelTops = [2]float64{22, 134}

// frame is what the template needs to draw a chart's fixed parts.
type frame struct {
	Width, Height, Left, Right, Mid float64
	XLabelY, XTitleY                float64
}

var chartFrame = frame{Width: chartWidth, Height: chartHeight, Left: plotLeft, Right: plotRight,
	Mid: plotLeft + plotWidth/2, XLabelY: xLabelY, XTitleY: xTitleY}

// scale is one panel's y axis: its top value, rounded up to 1, 2 or 5
// times a power of ten, and the labels for it.
type scale struct {
	// Top, Bottom and MidY are the panel's edges and middle, in user units.
	Top    float64 `json:"-"`
	Bottom float64 `json:"-"`
	MidY   float64 `json:"-"`
	// Max is the value at the top edge; 0 when nothing is drawn.
	Max float64 `json:"-"`
	// MaxText and MidText are the labels of the top and the middle.
	MaxText string `json:"max"`
	MidText string `json:"mid"`
}

// newScale fits values up to hi into the panel whose top edge is top. The
// smallest top is floor (0.5 for rates of 2 s buckets, 2 for counts, whose
// middle label should not read 0.5). The labels are numbers: the unit is
// in the panel's title.
func newScale(top, hi, floor float64) scale {
	s := scale{Top: top, Bottom: top + panelHeight, MidY: top + panelHeight/2}
	if hi <= 0 {
		return s
	}
	s.Max = max(niceCeil(hi), floor)
	s.MaxText, s.MidText = num(s.Max), num(s.Max/2)
	return s
}

// y is where value v sits on the scale.
func (s scale) y(v float64) float64 {
	if s.Max == 0 {
		return s.Bottom
	}
	return round1(s.Bottom - v/s.Max*panelHeight)
}

// niceCeil rounds v > 0 up to 1, 2 or 5 times a power of ten.
func niceCeil(v float64) float64 {
	e := math.Pow10(int(math.Floor(math.Log10(v))))
	for _, m := range []float64{1, 2, 5, 10} {
		if n := m * e; n >= v*(1-1e-9) {
			return n
		}
	}
	return 10 * e
}

// num shows a scale value or a rate: whole numbers plainly, fractions with
// at most two decimals.
func num(v float64) string {
	return strconv.FormatFloat(math.Round(v*100)/100, 'f', -1, 64)
}

func round1(v float64) float64 { return math.Round(v*10) / 10 }

// points writes an SVG polyline's points attribute.
func points(xs, ys []float64) string {
	var b strings.Builder
	for i := range xs {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(strconv.FormatFloat(xs[i], 'f', -1, 64))
		b.WriteByte(',')
		b.WriteString(strconv.FormatFloat(ys[i], 'f', -1, 64))
	}
	return b.String()
}

// clockText is a time of day in UTC, as the axis labels show it.
func clockText(t time.Time) string { return t.UTC().Format("15:04:05") }
