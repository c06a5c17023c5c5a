//go:build !race

package mva

// gridPrecision is the simulator's precision in the grid tests that set
// the analytical solver against it model by model (see race_test.go).
const gridPrecision = 0.01
