package study

import (
	"encoding/csv"
	"fmt"
	"image/color"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// WriteCSV writes one row per (series, x): the number of seeds, then for
// every metric its mean, standard deviation, minimum and maximum.
func (r *Result) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	head := []string{"experiment", "series", "x", "seeds"}
	for m := range NumMetrics {
		head = append(head, m.String()+"_mean", m.String()+"_sd", m.String()+"_min", m.String()+"_max")
	}
	if err := cw.Write(head); err != nil {
		return fmt.Errorf("write %s csv: %w", r.Experiment.ID, err)
	}
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }
	for _, p := range r.Points {
		row := []string{r.Experiment.ID, p.Series, f(p.X), strconv.Itoa(p.Seeds)}
		for m := range NumMetrics {
			s := p.Stats[m]
			row = append(row, f(s.Mean), f(s.SD), f(s.Min), f(s.Max))
		}
		if err := cw.Write(row); err != nil {
			return fmt.Errorf("write %s csv: %w", r.Experiment.ID, err)
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("write %s csv: %w", r.Experiment.ID, err)
	}
	return nil
}

// errXY is a curve with its error bars (one standard deviation).
type errXY struct {
	plotter.XYs
	plotter.YErrors
}

// Plot draws metric m of the experiment: a line per series, mean ± one
// standard deviation over the seeds.
func (r *Result) Plot(m Metric) (*plot.Plot, error) {
	ex := r.Experiment
	p := plot.New()
	p.Title.Text = ex.Title
	p.X.Label.Text = ex.XLabel
	p.Y.Label.Text = m.Title()
	if ex.LogX {
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	}
	p.Add(plotter.NewGrid())
	p.Legend.Top = true
	for i, s := range ex.Series {
		var c errXY
		for _, pt := range r.Points {
			if pt.Series != s.Name {
				continue
			}
			st := pt.Stats[m]
			c.XYs = append(c.XYs, plotter.XY{X: pt.X, Y: st.Mean})
			c.YErrors = append(c.YErrors, struct{ Low, High float64 }{st.SD, st.SD})
		}
		if len(c.XYs) == 0 {
			continue
		}
		if err := plotutil.AddLinePoints(p, s.Name, c.XYs); err != nil {
			return nil, fmt.Errorf("plot %s %s: %w", ex.ID, m, err)
		}
		eb, err := plotter.NewYErrorBars(c)
		if err != nil {
			return nil, fmt.Errorf("plot %s %s: %w", ex.ID, m, err)
		}
		eb.Color = plotutil.Color(i)
		if eb.Color == nil {
			eb.Color = color.Black
		}
		p.Add(eb)
	}
	return p, nil
}

// Write puts the experiment's CSV (ID.csv) and its figures
// (ID_metric.png, one per metric of the experiment) in dir.
func (r *Result) Write(dir string) ([]string, error) {
	ex := r.Experiment
	var files []string
	path := filepath.Join(dir, ex.ID+".csv")
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("policy study: %w", err)
	}
	err = r.WriteCSV(f)
	if cerr := f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("policy study: close %s: %w", path, cerr)
	}
	if err != nil {
		return nil, err
	}
	files = append(files, path)
	for _, m := range ex.Metrics {
		p, err := r.Plot(m)
		if err != nil {
			return files, err
		}
		path := filepath.Join(dir, ex.ID+"_"+m.String()+".png")
		if err := p.Save(16*vg.Centimeter, 10*vg.Centimeter, path); err != nil {
			return files, fmt.Errorf("policy study: save %s: %w", path, err)
		}
		files = append(files, path)
	}
	return files, nil
}
