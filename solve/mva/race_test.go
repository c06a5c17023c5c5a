//go:build race

package mva

// gridPrecision is the simulator's precision in the grid tests that set
// the analytical solver against it model by model. Under the race
// detector the simulator runs twenty times slower; the grids keep every
// model but simulate to 3 %, whose wider half-width the tests' bound
// includes, so that the package's tests keep to minutes.
const gridPrecision = 0.03
