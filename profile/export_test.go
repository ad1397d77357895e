package profile

// SolveRouter exposes solveRouter to the external tests.
var SolveRouter = solveRouter
