package sim

import (
	"fmt"
	"html"
	"io"
	"math"
	"strings"
)

// palette colours the policies' lines, in the order of the results.
var palette = []string{"#d62728", "#1f77b4", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22"}

// panel is one chart of a scenario's figure: a value of the points over
// time, one line per result.
type panel struct {
	title string
	value func(Point) float64
	// ref, when not NaN, is drawn as a dashed line (the database's
	// capacity).
	ref      float64
	refLabel string
	// zoom starts the axis near the lowest value instead of at 0.
	zoom bool
	// clip, when above 0, is the top of the axis: higher values are drawn
	// at the top (the title says so).
	clip   float64
	format func(float64) string
}

// Chart dimensions.
const (
	chartW    = 760
	panelH    = 170
	marginL   = 70
	marginR   = 40
	marginTop = 30
	gapH      = 40
	legendH   = 24
)

// writeSVG writes the figure of one scenario: hit rate, database load and
// boot limit over time, one line per result. It is plain SVG 1.1 with no
// script and nothing fetched.
func writeSVG(w io.Writer, scenario string, rs []Result, capacity float64) error {
	panels := []panel{
		{title: "hit rate (1-minute window)", value: func(p Point) float64 { return p.HitRate }, ref: math.NaN(), zoom: true, format: func(v float64) string { return fmt.Sprintf("%.2f%%", 100*v) }},
		{title: fmt.Sprintf("database load (queries/s asked, 10 s average; clipped at %.0f)", 4*capacity), value: func(p Point) float64 { return p.DBLoad }, ref: capacity, clip: 4 * capacity, refLabel: "capacity", format: func(v float64) string { return fmt.Sprintf("%.0f", v) }},
		{title: "boot limit (boots/s; none: no line)", value: func(p Point) float64 { return p.BootLimit }, ref: math.NaN(), format: func(v float64) string { return fmt.Sprintf("%.0f", v) }},
	}
	height := marginTop + legendH + len(panels)*(panelH+gapH)
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="11">`+"\n", chartW, height, chartW, height)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="%d" y="18" font-size="14" font-weight="bold">%s</text>`+"\n", marginL, html.EscapeString(scenario))
	// legend
	x := marginL
	for k, r := range rs {
		c := palette[k%len(palette)]
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="12" height="4" fill="%s"/><text x="%d" y="%d">%s</text>`+"\n", x, marginTop+2, c, x+16, marginTop+7, html.EscapeString(r.Policy))
		x += 24 + 7*len(r.Policy)
	}
	tMin, tMax := math.Inf(1), math.Inf(-1)
	for _, r := range rs {
		for _, p := range r.Series {
			tMin, tMax = math.Min(tMin, p.T), math.Max(tMax, p.T)
		}
	}
	if !(tMax > tMin) {
		tMin, tMax = 0, 1
	}
	for i, pn := range panels {
		top := marginTop + legendH + i*(panelH+gapH) + 14
		writePanel(&b, pn, rs, top, tMin, tMax)
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// writePanel draws one panel whose plot area starts at top.
func writePanel(b *strings.Builder, pn panel, rs []Result, top int, tMin, tMax float64) {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, r := range rs {
		for _, p := range r.Series {
			if v := pn.value(p); !math.IsNaN(v) && !math.IsInf(v, 0) {
				lo, hi = math.Min(lo, v), math.Max(hi, v)
			}
		}
	}
	if !math.IsNaN(pn.ref) {
		lo, hi = math.Min(lo, pn.ref), math.Max(hi, pn.ref)
	}
	if math.IsInf(lo, 1) {
		lo, hi = 0, 1
	}
	if pn.zoom && lo < hi {
		lo = math.Max(0, lo-(hi-lo)*0.1)
	} else {
		lo = 0
	}
	if pn.clip > 0 {
		hi = math.Min(hi, pn.clip)
	}
	if hi <= lo {
		hi = lo + 1
	}
	hi += (hi - lo) * 0.05
	plotW := chartW - marginL - marginR
	px := func(t float64) float64 { return marginL + (t-tMin)/(tMax-tMin)*float64(plotW) }
	py := func(v float64) float64 { return float64(top) + (hi-v)/(hi-lo)*panelH }
	fmt.Fprintf(b, `<text x="%d" y="%d" font-weight="bold">%s</text>`+"\n", marginL, top-4, html.EscapeString(pn.title))
	fmt.Fprintf(b, `<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#999"/>`+"\n", marginL, top, plotW, panelH)
	for k := 0; k <= 4; k++ {
		v := lo + (hi-lo)*float64(k)/4
		y := py(v)
		fmt.Fprintf(b, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#eee"/><text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n",
			marginL, marginL+plotW, y, y, marginL-4, y+4, pn.format(v))
		t := tMin + (tMax-tMin)*float64(k)/4
		fmt.Fprintf(b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", px(t), top+panelH+14, fmtMinutes(t))
	}
	if !math.IsNaN(pn.ref) {
		y := py(pn.ref)
		fmt.Fprintf(b, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#000" stroke-dasharray="5,4"/><text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n",
			marginL, marginL+plotW, y, y, marginL+plotW-4, y-4, html.EscapeString(pn.refLabel))
	}
	for k, r := range rs {
		var path strings.Builder
		pen := false
		for _, p := range r.Series {
			v := pn.value(p)
			if math.IsNaN(v) || math.IsInf(v, 0) {
				pen = false
				continue
			}
			if pn.clip > 0 {
				v = math.Min(v, pn.clip)
			}
			cmd := "L"
			if !pen {
				cmd = "M"
			}
			fmt.Fprintf(&path, "%s%.1f %.1f ", cmd, px(p.T), py(v))
			pen = true
		}
		if path.Len() > 0 {
			fmt.Fprintf(b, `<path d="%s" fill="none" stroke="%s" stroke-width="1.5" opacity="0.85"/>`+"\n", strings.TrimSpace(path.String()), palette[k%len(palette)])
		}
	}
}

// fmtMinutes labels a time axis tick, in minutes from the scenario's start.
func fmtMinutes(t float64) string {
	return fmt.Sprintf("%+.0f min", t/60)
}
