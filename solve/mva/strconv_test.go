package mva

import "strconv"

func strconvF(f float64) string { return strconv.FormatFloat(f, 'f', 6, 64) }
