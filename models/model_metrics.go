package models

import (
	"math"
	"sort"
)

// MAE is the mean absolute error of pred against y.
func MAE(pred, y []float64) float64 {
	if len(y) == 0 {
		return math.NaN()
	}
	s := 0.0
	for i := range y {
		s += math.Abs(pred[i] - y[i])
	}
	return s / float64(len(y))
}

// RMSE is the root mean squared error of pred against y.
func RMSE(pred, y []float64) float64 {
	if len(y) == 0 {
		return math.NaN()
	}
	s := 0.0
	for i := range y {
		d := pred[i] - y[i]
		s += d * d
	}
	return math.Sqrt(s / float64(len(y)))
}

// Accuracy is the share of rows where the probability p thresholded at 0.5
// equals the 0/1 label y.
func Accuracy(p, y []float64) float64 {
	if len(y) == 0 {
		return math.NaN()
	}
	ok := 0
	for i := range y {
		if (p[i] >= 0.5) == (y[i] >= 0.5) {
			ok++
		}
	}
	return float64(ok) / float64(len(y))
}

// AUC is the area under the ROC curve of scores p for 0/1 labels y (the
// Mann–Whitney statistic; ties count one half). NaN when one class is absent.
func AUC(p, y []float64) float64 {
	idx := make([]int, len(p))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return p[idx[a]] < p[idx[b]] })
	// Average ranks over ties.
	ranks := make([]float64, len(p))
	for i := 0; i < len(idx); {
		j := i
		for j+1 < len(idx) && p[idx[j+1]] == p[idx[i]] {
			j++
		}
		r := float64(i+j)/2 + 1
		for k := i; k <= j; k++ {
			ranks[idx[k]] = r
		}
		i = j + 1
	}
	var npos, nneg, sum float64
	for i := range y {
		if y[i] >= 0.5 {
			npos++
			sum += ranks[i]
		} else {
			nneg++
		}
	}
	if npos == 0 || nneg == 0 {
		return math.NaN()
	}
	return (sum - npos*(npos+1)/2) / (npos * nneg)
}

// Mean is the arithmetic mean (NaN when empty): the constant predictor a
// regression model must beat.
func Mean(y []float64) float64 {
	if len(y) == 0 {
		return math.NaN()
	}
	s := 0.0
	for _, v := range y {
		s += v
	}
	return s / float64(len(y))
}

// Constant returns n copies of v.
func Constant(v float64, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = v
	}
	return out
}

// Pinball is the mean quantile (pinball) loss of predictions pred of quantile q for targets y.
func Pinball(pred, y []float64, q float64) float64 {
	if len(y) == 0 {
		return math.NaN()
	}
	s := 0.0
	for i := range y {
		r := y[i] - pred[i]
		if r >= 0 {
			s += q * r
		} else {
			s += (q - 1) * r
		}
	}
	return s / float64(len(y))
}
